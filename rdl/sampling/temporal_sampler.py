"""A temporal heterogeneous neighbour sampler for PyG's NodeLoader and LinkLoader."""
from __future__ import annotations

import os
from functools import partial
from typing import Literal

import torch
from torch import Tensor
from torch.utils.data import get_worker_info
from torch_geometric.data import HeteroData
from torch_geometric.sampler import (
    BaseSampler,
    EdgeSamplerInput,
    HeteroSamplerOutput,
    NegativeSampling,
    NodeSamplerInput,
)
from torch_geometric.sampler.neighbor_sampler import edge_sample, node_sample
from torch_geometric.typing import NodeType

from rdl.sampling.csc import ParentIndex
from rdl.sampling.expansion import expand
from rdl.sampling.fanout import (
    AUTO_SHARE_LINKS,
    FanoutSpec,
    check_shared_fanout,
    resolve_fanouts,
    sharing_groups,
)
from rdl.sampling.graph_index import GraphIndex
from rdl.sampling.relabel import NodeScratch, SampledNodes
from rdl.sampling.validation import check_seeds

STRATEGIES = ("uniform", "last")


class TemporalNeighborSampler(BaseSampler):
    r"""Samples disjoint, time-consistent neighbourhoods of seed nodes in a
    heterogeneous graph, for :class:`torch_geometric.loader.NodeLoader` and
    :class:`torch_geometric.loader.LinkLoader`.

    Every seed gets its own subgraph: a node reached from two seeds appears twice,
    and :obj:`batch` gives the seed index of every sampled node. Starting from the
    seeds, each hop samples, for every node added in the previous hop and every
    edge type into its type, up to the hop's fan-out of source nodes. When seed
    times are given, no node newer than its seed is sampled (nodes of types without
    a time attribute are always allowed; seeds are always included). Without seed
    times nothing is filtered.

    Neighbour lists are sorted by time in advance; among nodes with equal times a
    larger node id counts as more recent. Sampled edges carry no edge ids
    (:obj:`edge_permutation` is :obj:`None`, sampled edge attributes are dropped).

    .. code-block:: python

        sampler = TemporalNeighborSampler(data, [64, 64], strategy="last")
        loader = NodeLoader(data, node_sampler=sampler,
                            input_nodes=("customers", index), input_time=time,
                            batch_size=512)

    Args:
        data (HeteroData): The graph; one node type per table (:obj:`num_nodes`
            set), optional int64 node times in :obj:`data[node_type][time_attr]`.
        num_neighbors (List[int] or Dict[Tuple[str, str, str], List[int]]): Fan-out
            per hop, for all edge types or per edge type; :obj:`-1` takes all
            allowed neighbours.
        time_attr (str, optional): Name of the node time attribute.
            (default: :obj:`"time"`)
        strategy (str, optional): :obj:`"uniform"` samples without replacement
            among the allowed neighbours; :obj:`"last"` takes the most recent ones.
            (default: :obj:`"uniform"`)
        shared_fanout (bool, optional): Make each hop's fan-out a budget per
            node, shared by the edge types that bring it many neighbours, instead
            of a count per edge type: each takes what it has at the seed time up
            to an even share, and what one leaves goes to the others
            (see :func:`~rdl.sampling.fanout.water_fill`). A wide schema then
            costs about what a narrow one does. :obj:`"auto"` shares only where
            at least :data:`~rdl.sampling.fanout.AUTO_SHARE_LINKS` edge types
            bring a node type many neighbours. (default: :obj:`False`)
        seed (int, optional): Seed of the sampler's random number generator. In
            loader worker processes it is combined with the worker's seed, which
            the DataLoader draws from torch's global generator. :obj:`None` uses
            torch's global generator. (default: :obj:`None`)
    """

    def __init__(
        self,
        data: HeteroData,
        num_neighbors: FanoutSpec,
        *,
        time_attr: str = "time",
        strategy: Literal["uniform", "last"] = "uniform",
        shared_fanout: bool | Literal["auto"] = False,
        seed: int | None = None,
    ):
        if not isinstance(data, HeteroData):
            raise TypeError(
                f"{self.__class__.__name__} samples heterogeneous graphs; "
                f"data must be a HeteroData (got {type(data).__name__})"
            )
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES} (got {strategy!r})")
        self.index = GraphIndex.from_data(data, time_attr)
        self.fanouts = resolve_fanouts(num_neighbors, self.index.edge_types)
        check_shared_fanout(shared_fanout)
        self.shared = None
        if shared_fanout:
            many = {et for et, adjacency in self.index.adjacency.items()
                    if not isinstance(adjacency, ParentIndex)}
            min_links = AUTO_SHARE_LINKS if shared_fanout == "auto" else 2
            self.shared = sharing_groups(self.fanouts, many, min_links)
        self.num_hops = len(next(iter(self.fanouts.values()), []))
        self.time_attr = time_attr
        self.strategy = strategy
        self.seed = seed
        self._scratch: dict[NodeType, NodeScratch] = {}
        self._generator: torch.Generator | None = None
        self._generator_pid: int | None = None

    def sample_from_nodes(
        self,
        inputs: NodeSamplerInput,
        **kwargs,
    ) -> HeteroSamplerOutput:
        r"""Samples the neighbourhoods of the seed nodes :obj:`inputs.node` of type
        :obj:`inputs.input_type`, at the seed times :obj:`inputs.time` if given.

        Returns:
            A :class:`HeteroSamplerOutput` whose :obj:`metadata` is
            :obj:`(input_id, seed_time)`; seeds come first in their type's nodes.
        """
        if inputs.input_type is None:
            raise ValueError(
                f"{self.__class__.__name__} needs the seed node type; pass "
                f"input_nodes=(node_type, index) to the loader"
            )
        return node_sample(inputs, self._sample)

    def sample_from_edges(
        self,
        inputs: EdgeSamplerInput,
        neg_sampling: NegativeSampling | None = None,
    ) -> HeteroSamplerOutput:
        r"""Samples the neighbourhoods of both endpoints of the seed links, each
        endpoint in its own subgraph, at the link times :obj:`inputs.time` if given.
        Negative links (:obj:`"binary"` or :obj:`"triplet"`) are drawn as PyG's
        :class:`~torch_geometric.sampler.NeighborSampler` draws them, avoiding
        nodes newer than the link time when link times are given.

        Returns:
            A :class:`HeteroSamplerOutput` with the metadata
            :class:`~torch_geometric.loader.LinkLoader` expects.
        """
        if inputs.input_type is None:
            raise ValueError(
                f"{self.__class__.__name__} needs the seed edge type; pass "
                f"edge_label_index=(edge_type, index) to the loader"
            )
        for node_type in (inputs.input_type[0], inputs.input_type[-1]):
            if node_type not in self.index.num_nodes:
                raise ValueError(
                    f"The seed edge type {inputs.input_type} names the node type "
                    f"{node_type!r}, which the graph does not have; use node "
                    f"types from {self.index.node_types}"
                )
        node_time = self.index.node_time if inputs.time is not None else None
        return edge_sample(
            inputs, self._sample, self.index.num_nodes, True, node_time, neg_sampling
        )

    @property
    def edge_permutation(self) -> None:
        r"""Always :obj:`None`: sampled edges carry no edge ids."""
        return None

    def _sample(
        self,
        seed: dict[NodeType, Tensor],
        seed_time: dict[NodeType, Tensor] | None = None,
    ) -> HeteroSamplerOutput:
        index = self.index
        seed, time = check_seeds(
            seed, seed_time, index.num_nodes, index.node_time, self.time_attr
        )
        num_seeds = sum(nodes.numel() for nodes in seed.values())
        sampled = {
            nt: SampledNodes(partial(self._scratch_of, nt), num_seeds)
            for nt in index.node_types
        }
        try:
            offset = 0
            for node_type, nodes in seed.items():
                seed_index = torch.arange(offset, offset + nodes.numel())
                sampled[node_type].add(nodes, seed_index, distinct=True)
                offset += nodes.numel()
            edges = expand(index, self.fanouts, self.strategy, sampled, time, self._random(),
                           self.shared)
        finally:
            for nodes in sampled.values():
                nodes.release()

        return HeteroSamplerOutput(
            node={nt: nodes.node for nt, nodes in sampled.items()},
            row=edges.row,
            col=edges.col,
            edge={et: None for et in index.edge_types},
            batch={nt: nodes.seed for nt, nodes in sampled.items()},
            num_sampled_nodes=edges.num_sampled_nodes,
            num_sampled_edges=edges.num_sampled_edges,
        )

    def _scratch_of(self, node_type: NodeType) -> NodeScratch:
        if node_type not in self._scratch:
            self._scratch[node_type] = NodeScratch(self.index.num_nodes[node_type])
        return self._scratch[node_type]

    def _random(self) -> torch.Generator | None:
        # One generator per process: loader workers must not replay one stream.
        if self.seed is None:
            return None
        if self._generator_pid != os.getpid():
            worker = get_worker_info()
            seed = self.seed if worker is None else hash((self.seed, worker.seed))
            self._generator = torch.Generator().manual_seed(seed % 2**63)
            self._generator_pid = os.getpid()
        return self._generator

    def __getstate__(self) -> dict:
        # Scratch memory and the generator are per process; do not ship them.
        state = self.__dict__.copy()
        state.update(_scratch={}, _generator=None, _generator_pid=None)
        return state

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(num_hops={self.num_hops}, "
            f"strategy={self.strategy!r}, time_attr={self.time_attr!r})"
        )

