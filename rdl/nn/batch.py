"""Sampled ``HeteroData`` mini-batch -> :class:`PackedBatch`, the plain-tensor
input of :class:`~rdl.nn.RelationalModel`.

Everything data-dependent happens here, outside the compiled model: finding the
distinct rows of each node type (disjoint subgraphs repeat the same rows for
many seeds), the relative times, the per-layer node and edge prefixes (nodes
and edges come in hop order, so layer ``l`` of ``L`` only needs the nodes within
``L - 1 - l`` hops of a seed and the edges into them) and inverse degrees. The
result holds every node and edge type of the graph, empty or not, so the
compiled model always sees the same structure.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import Tensor
from torch_frame import TensorFrame, stype
from torch_geometric.data import HeteroData
from torch_geometric.typing import EdgeType

from rdl.graph import SECONDS_PER_DAY
from rdl.nn.keys import edge_key
from rdl.nn.messages import MessageLayout
from rdl.nn.timestamp_ages import timestamp_ages


@dataclass
class PackedBatch:
    r"""One mini-batch as plain tensors, made by :class:`BatchPacker`.

    ``U`` is the number of distinct rows of a node type, ``N`` its number of
    nodes in the first layer's input, ``N_l`` the nodes layer ``l`` updates.

    Args:
        features (dict): Node type -> stype name -> tensor over the ``U``
            distinct rows: ``numerical [U, n]`` float, ``categorical [U, n]``
            int64 (``-1`` missing), ``timestamp [U, n, 7]`` int64,
            ``embedding [U, D]`` float, and for multicategorical columns
            ``multicategorical [V]`` (category of each value),
            ``multicategorical_bag [V]`` (``row * n + column``) and
            ``multicategorical_weight [V]`` (one over the bag size).
        rows (dict): Node type -> global ids of the distinct rows ``[U]``.
        gather (dict): Node type -> row of each node in :obj:`rows` ``[N]``.
        rel_time (dict): Timed node type -> seed time minus node time in days
            ``[N]`` (zeros when the loader gave no seed times).
        edge_index (list): Per layer, edge key -> local ``[2, E_l]`` edges.
        inv_degree (list): Per layer, node type -> ``[N_l, k]`` inverse
            in-degree per incoming edge type (``1`` without edges); its first
            dimension is the number of nodes the layer updates.
        msg_src (list): Per layer, source type -> source node of each message
            (see :mod:`rdl.nn.messages`).
        msg_slot (list): Per layer, the slot of each message ``[E]``.
        msg_weight (list): Per layer, the inverse degree of each message's
            destination for its edge type ``[E]``.
        seed_time (Tensor): Seed times ``[B]`` (zeros without times).
        node_id (dict): Node type -> global id of each node ``[N]``.
        seed_index (dict): Node type -> seed of each node ``[N]``.
        node_stats (dict): Node type -> temporal neighbour statistics of each
            node ``[N, width]`` (see :mod:`rdl.sampling.node_stats`), for
            the types with incoming edges; empty when the packer does not
            use them.
        past_label (dict): For the entity type of an event-level task, each
            node's own label and whether the model may see it ``[N, 2]``:
            only rows strictly older than their seed show their label.
        ages (dict): Node type -> the age of each node's timestamp columns at
            its seed time ``[N, 3 * n]`` (see :mod:`rdl.nn.timestamp_ages`),
            for the types with timestamp columns; empty when the packer does
            not pack them.
        seed_features (Tensor, optional): Per-seed input features ``[B, F]``
            (the baseline's aggregates), for a model built with
            ``seed_features=F``.
    """

    features: dict[str, dict[str, Tensor]]
    rows: dict[str, Tensor]
    gather: dict[str, Tensor]
    rel_time: dict[str, Tensor]
    edge_index: list[dict[str, Tensor]]
    inv_degree: list[dict[str, Tensor]]
    msg_src: list[dict[str, Tensor]]
    msg_slot: list[Tensor]
    msg_weight: list[Tensor]
    seed_time: Tensor
    node_id: dict[str, Tensor] = field(default_factory=dict)
    seed_index: dict[str, Tensor] = field(default_factory=dict)
    node_stats: dict[str, Tensor] = field(default_factory=dict)
    past_label: dict[str, Tensor] = field(default_factory=dict)
    ages: dict[str, Tensor] = field(default_factory=dict)
    seed_features: Tensor | None = None

    @property
    def num_seeds(self) -> int:
        return self.seed_time.size(0)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> PackedBatch:
        r"""Returns a copy with every tensor on :obj:`device`."""
        def move(value):
            if isinstance(value, Tensor):
                return value.to(device, non_blocking=non_blocking)
            if isinstance(value, dict):
                return {k: move(v) for k, v in value.items()}
            if isinstance(value, list):
                return [move(v) for v in value]
            return value

        return PackedBatch(**{k: move(v) for k, v in self.__dict__.items()})

    def mark_dynamic(self) -> PackedBatch:
        r"""Marks every batch-dependent size as unbacked dynamic for
        :func:`torch.compile`, so that no size (0, 1, above 4096, ...) makes
        the compiled model specialise or recompile. Idempotent; returns
        :obj:`self`."""
        tensors = [self.seed_time, *self.rows.values(), *self.gather.values(),
                   *self.rel_time.values(), *self.node_stats.values(), *self.past_label.values(),
                   *self.ages.values(), *self.node_id.values(), *self.seed_index.values()]
        for feats in self.features.values():
            tensors.extend(feats.values())
        if self.seed_features is not None:
            tensors.append(self.seed_features)
        for layer in self.inv_degree + self.msg_src:
            tensors.extend(layer.values())
        tensors.extend(self.msg_slot + self.msg_weight)
        for tensor in tensors:
            _mark(tensor, 0)
        for layer in self.edge_index:
            for tensor in layer.values():
                _mark(tensor, 1)
        return self


def _mark(tensor: Tensor, dim: int) -> None:
    if dim not in getattr(tensor, "_dynamo_unbacked_indices", ()):
        torch._dynamo.decorators.mark_unbacked(tensor, dim)


class BatchPacker:
    r"""Turns a mini-batch from :class:`~rdl.sampling.TemporalNeighborSampler`
    (through :class:`~torch_geometric.loader.NodeLoader`) into a
    :class:`PackedBatch`. Use it as the loader's :obj:`transform` so that it runs
    in the loader workers, or call it on each batch.

    Features come from each sampled store's ``tf`` (PyG's loader copies a row
    per sampled node, repeats included), or, for a packer made by
    :meth:`gathering_from`, straight from the whole graph's frames, once per
    distinct row; the loader then runs on :func:`without_features` of the graph.

    Args:
        metadata (tuple): ``(node_types, edge_types)`` of the full graph.
        seed_type (str): Node type of the seeds.
        num_layers (int): Number of message passing layers of the model.
        trim (bool, optional): Keep only the nodes and edges each layer needs
            (exact for outputs at the seeds); :obj:`False` updates every node in
            every layer (needed to score non-seed nodes). (default: :obj:`True`)
        dynamic (bool, optional): Mark batch sizes as unbacked dynamic for
            :func:`torch.compile`. (default: :obj:`True`)
        stats_widths (dict, optional): Node type -> width of its temporal
            neighbour statistics, for a model that reads them; the loader
            must then apply :class:`~rdl.sampling.TemporalNodeStats`.
            (default: :obj:`None`, statistics are not packed)
        label_type (str, optional): Node type whose rows carry their task
            label in ``past_label`` (event-level tasks), to be shown for rows
            older than their seed. (default: :obj:`None`)
        timestamp_ages (bool, optional): Pack the age of every timestamp
            value at its node's seed time (:attr:`PackedBatch.ages`).
            (default: :obj:`False`)
    """

    def __init__(
        self,
        metadata: tuple[list[str], list[EdgeType]],
        seed_type: str,
        num_layers: int,
        *,
        trim: bool = True,
        dynamic: bool = True,
        stats_widths: dict[str, int] | None = None,
        label_type: str | None = None,
        timestamp_ages: bool = False,
    ):
        self.node_types, self.edge_types = list(metadata[0]), list(metadata[1])
        if seed_type not in self.node_types:
            raise ValueError(f"seed_type={seed_type!r} is not a node type; use one of "
                             f"{self.node_types}")
        self.seed_type = seed_type
        self.num_layers = num_layers
        self.trim = trim
        self.dynamic = dynamic
        self.stats_widths = {nt: w for nt, w in (stats_widths or {}).items() if w > 0}
        self.label_type = label_type
        self.timestamp_ages = timestamp_ages
        self.layout = MessageLayout(self.node_types, self.edge_types)
        self.incoming = self.layout.incoming
        self.frames: dict[str, TensorFrame] = {}

    def gathering_from(self, frames: dict[str, TensorFrame]) -> BatchPacker:
        r"""A copy of this packer that reads each node type's features from
        :obj:`frames` (the whole graph's ``tf`` per node type, as
        :func:`without_features` returns them) by distinct row, so that the
        loader need not copy them first."""
        packer = copy.copy(self)
        packer.frames = dict(frames)
        return packer

    def __call__(self, batch: HeteroData) -> PackedBatch:
        L = self.num_layers
        seed_store = batch[self.seed_type]
        num_seeds = int(seed_store.batch_size)
        seed_time = seed_store.get("seed_time")
        timed = seed_time is not None
        seed_time = seed_time.clone() if timed else torch.zeros(num_seeds, dtype=torch.long)
        features, rows, gather, rel_time, node_id, seed_index = {}, {}, {}, {}, {}, {}
        node_stats, past_label, ages = {}, {}, {}
        for nt in self.node_types:
            store = batch[nt] if nt in batch.node_types else None
            num = self._num_nodes(store, L)
            n_id = _prefix(store, "n_id", num)
            rows[nt], gather[nt] = _distinct(n_id)
            node_id[nt] = n_id
            seed_index[nt] = _prefix(store, "batch", num)
            if nt in self.frames:
                features[nt] = frame_tensors(self.frames[nt], rows[nt])
            elif store is not None and "tf" in store:
                first = torch.empty_like(rows[nt]).scatter_(0, gather[nt], torch.arange(num))
                features[nt] = frame_tensors(store.tf, first)
            if store is not None and "time" in store:  # 0 without seed times
                delta = seed_time.index_select(0, seed_index[nt]) - store.time[:num]
                rel_time[nt] = delta.to(torch.float32).div_(SECONDS_PER_DAY).mul_(timed)
            if nt in self.stats_widths:
                node_stats[nt] = _node_stats(store, nt, num, self.stats_widths[nt])
            if self.timestamp_ages and "timestamp" in features.get(nt, {}):
                ages[nt] = timestamp_ages(features[nt]["timestamp"], gather[nt],
                                          seed_time if timed else None, seed_index[nt])
            if nt == self.label_type:
                past_label[nt] = _past_label(store, nt, num, seed_time if timed else None,
                                             seed_index[nt])
        edge_index, inv_degree, msg_src, msg_slot, msg_weight = [], [], [], [], []
        for layer in range(L):
            hops = L - 1 - layer
            edges = {}
            for et in self.edge_types:
                store = batch[et] if et in batch.edge_types else None
                edges[edge_key(et)] = _edge_prefix(store, hops if self.trim else None)
            degrees = {}
            for nt in self.node_types:
                store = batch[nt] if nt in batch.node_types else None
                size = self._num_nodes(store, hops)
                columns = [torch.bincount(edges[edge_key(et)][1], minlength=size)
                           for et in self.incoming[nt]]
                degree = (torch.stack(columns, 1) if columns
                          else torch.zeros(size, 0, dtype=torch.long))
                degrees[nt] = degree.clamp(min=1).to(torch.float32).reciprocal_()
            edge_index.append(edges)
            inv_degree.append(degrees)
            src, slot, weight = self.layout.flatten(edges, degrees)
            msg_src.append(src)
            msg_slot.append(slot)
            msg_weight.append(weight.to(torch.float32))
        packed = PackedBatch(features, rows, gather, rel_time, edge_index, inv_degree,
                             msg_src, msg_slot, msg_weight, seed_time, node_id, seed_index,
                             node_stats, past_label, ages)
        return packed.mark_dynamic() if self.dynamic else packed

    def _num_nodes(self, store, hops: int) -> int:
        # Nodes within `hops` hops of a seed (all nodes when not trimming).
        if store is None:
            return 0
        counts = store.get("num_sampled_nodes")
        if not self.trim or counts is None:
            return store.num_nodes
        return int(sum(counts[: hops + 1]))

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(seed_type={self.seed_type!r}, "
                f"num_layers={self.num_layers}, trim={self.trim})")


def _node_stats(store, node_type: str, num: int, width: int) -> Tensor:
    if store is None or num == 0:
        return torch.zeros(num, width)
    if "node_stats" not in store:
        raise ValueError(f"The batch has no node_stats for {node_type!r}: a model with "
                         "temporal_stats needs the loader to apply "
                         "rdl.sampling.TemporalNodeStats (rdl's data module and Predictor do)")
    stats = store.node_stats[:num].clone()  # not a view: see _edge_prefix
    if stats.size(1) != width:
        raise ValueError(f"node_stats of {node_type!r} have {stats.size(1)} columns; the model "
                         f"expects {width} (another graph or sampler version?)")
    return stats


def _past_label(store, node_type: str, num: int, seed_time: Tensor | None,
                seed_index: Tensor) -> Tensor:
    # [label where visible else 0, visible]: visible = known and older than the seed.
    if store is None or num == 0:
        return torch.zeros(num, 2)
    if "past_label" not in store:
        raise ValueError(f"The batch has no past_label for {node_type!r}: a model that shows "
                         "past labels needs graph[entity].past_label (rdl's data module and "
                         "Predictor set it)")
    label = store.past_label[:num].to(torch.float32)
    visible = ~torch.isnan(label)
    if seed_time is None or "time" not in store:
        visible = torch.zeros_like(visible)
    else:
        visible &= store.time[:num] < seed_time.index_select(0, seed_index)
    return torch.stack([torch.where(visible, label, 0.0), visible.to(torch.float32)], dim=1)


def _prefix(store, attr: str, num: int) -> Tensor:
    if store is None or attr not in store:
        return torch.zeros(num, dtype=torch.long)
    return store[attr][:num].clone()  # not a view: see _edge_prefix


def _edge_prefix(store, hops: int | None) -> Tensor:
    if store is None or "edge_index" not in store:
        return torch.zeros(2, 0, dtype=torch.long)
    counts = store.get("num_sampled_edges")
    edge_index = store.edge_index
    if hops is not None and counts is not None:
        edge_index = edge_index[:, : int(sum(counts[: hops + 1]))]
    # A view would make the compiled model guard on the size of its base.
    return edge_index.contiguous() if edge_index._base is None else edge_index.clone()


def _distinct(n_id: Tensor) -> tuple[Tensor, Tensor]:
    # Distinct global ids and the position of each node's id among them.
    if n_id.numel() == 0:
        return n_id.new_empty(0), n_id.new_empty(0)
    rows, inverse = torch.unique(n_id, return_inverse=True)
    return rows, inverse


def without_features(graph: HeteroData) -> tuple[HeteroData, dict[str, TensorFrame]]:
    r"""Splits :obj:`graph` into a graph with everything but the node
    features (new stores over the same tensors, nothing copied) and the
    features, node type -> ``tf``. A loader over the first copies no feature
    rows; a packer from :meth:`BatchPacker.gathering_from` the second reads them."""
    skeleton = copy.copy(graph)
    frames = {}
    for nt in skeleton.node_types:
        if "tf" in skeleton[nt]:
            frames[nt] = skeleton[nt].tf
            del skeleton[nt].tf
    return skeleton, frames


def frame_tensors(tf: TensorFrame, index: Tensor) -> dict[str, Tensor]:
    r"""The rows :obj:`index` of a :class:`~torch_frame.TensorFrame` as the
    plain tensors of :attr:`PackedBatch.features`."""
    out = {}
    for st, feat in tf.feat_dict.items():
        if st == stype.multicategorical:
            sub = feat[index]
            sizes = sub.offset[1:] - sub.offset[:-1]  # Per (row, column) bag.
            bag = torch.repeat_interleave(torch.arange(sizes.numel()), sizes,
                                          output_size=sub.values.numel())
            out["multicategorical"] = sub.values
            out["multicategorical_bag"] = bag
            out["multicategorical_weight"] = sizes.clamp(min=1).reciprocal()[bag].float()
        elif st == stype.embedding:
            out["embedding"] = feat[index].values
        else:
            out[st.value] = feat.index_select(0, index)
    return out
