"""The relational model: encoders, heterogeneous GNN and a task head."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from rdl.nn.batch import BatchPacker, PackedBatch
from rdl.nn.encoder import HeteroEncoder
from rdl.nn.gnn import HeteroGNN
from rdl.nn.heads import IDGNNHead, ItemFeatures, NodeHead, TwoTowerHead
from rdl.nn.keys import check_choice
from rdl.nn.messages import prefix
from rdl.nn.graph_spec import GraphSpec
from rdl.nn.settings import ModelSettings
from rdl.nn.timestamp_ages import FEATURES_PER_COLUMN
from rdl.sampling import stats_widths
from rdl.tasks.task_types import BINARY, MULTICLASS, RECOMMENDATION, REGRESSION, TASK_TYPES


class RelationalModel(torch.nn.Module):
    r"""Relational deep learning model over sampled temporal subgraphs.

    Each table's rows are encoded (once per distinct row in a batch) by a row
    encoder, plus a relative-time encoding on timed tables, a learned vector on
    tables without features and optional shallow embeddings; a heterogeneous
    GNN passes messages; a head maps the seeds (or candidate items) to outputs.

    :meth:`forward` takes a :class:`~rdl.nn.PackedBatch` from :attr:`packer`
    (use it as the loader's :obj:`transform`) and returns

    * :obj:`"binary"`/:obj:`"regression"`: :math:`(B, 1)`; :obj:`"multiclass"`:
      :math:`(B, \text{out\_channels})`, for the :math:`B` seeds in order;
    * :obj:`"recommendation"` with :obj:`rec_head="two_tower"`: :math:`(B, I)`
      scores of every item; with :obj:`"idgnn"`: the same, plus the ID-GNN
      score of the items inside each seed's subgraph (see :class:`IDGNNHead`).

    Args:
        graph (HeteroData or GraphSpec): The full graph from
            :func:`rdl.graph.build_graph`, or its :class:`~rdl.nn.GraphSpec`.
        seed_type (str): Node type of the seeds (the task's entity table).
        task_type (str): :obj:`"binary"`, :obj:`"multiclass"`,
            :obj:`"regression"` or :obj:`"recommendation"`.
        out_channels (int, optional): Outputs per seed (number of classes for
            multiclass). (default: :obj:`1`)
        item_type (str, optional): Item node type of recommendation tasks.
            (default: :obj:`None`)
        settings (ModelSettings or dict, optional): The model's settings (see
            :class:`~rdl.nn.ModelSettings`). (default: :obj:`None`, the defaults)
        seed_features (int, optional): Width of the per-seed input features
            (:attr:`PackedBatch.seed_features`, e.g. the baseline's
            aggregates), added to each seed's embedding through a two-layer
            MLP before the head; :obj:`0` for none. (default: :obj:`0`)
        **overrides: Any :class:`~rdl.nn.ModelSettings` field, on top of
            :obj:`settings` (e.g. ``channels=128``).
    """

    def __init__(
        self,
        graph: HeteroData | GraphSpec,
        *,
        seed_type: str,
        task_type: str,
        out_channels: int = 1,
        item_type: str | None = None,
        settings: ModelSettings | dict | None = None,
        seed_features: int = 0,
        **overrides,
    ):
        super().__init__()
        spec = graph if isinstance(graph, GraphSpec) else GraphSpec.from_data(graph)
        self.task_type = check_choice("task_type", task_type, TASK_TYPES)
        cfg = ModelSettings.coerce(settings, **overrides).resolved(task_type)
        self.spec, self.settings = spec, cfg
        check_choice("seed_type", seed_type, spec.node_types)
        for nt in cfg.shallow_types or []:
            check_choice("shallow_types entry", nt, spec.node_types)
        _check_out_channels(task_type, out_channels)
        self.seed_type, self.gnn_name, self.encoder_name = seed_type, cfg.gnn, cfg.encoder
        self.rec_head = None
        if task_type == RECOMMENDATION:
            self.rec_head = cfg.rec_head
            if item_type is None:
                raise ValueError("A recommendation model needs item_type (the node type of "
                                 f"the items); one of {spec.node_types}")
            check_choice("item_type", item_type, spec.node_types)
        self.item_type = item_type
        idgnn = self.rec_head == "idgnn"
        out_types = list(dict.fromkeys([item_type, seed_type])) if idgnn else [seed_type]
        channels = cfg.channels

        widths = (stats_widths(spec.node_types, spec.edge_types, spec.time_types)
                  if cfg.temporal_stats else None)
        self.temporal_stats = cfg.temporal_stats
        self.encoder = HeteroEncoder(
            spec.node_types, spec.col_names_dicts, spec.col_stats_dict, channels,
            encoder=cfg.encoder, encoder_layers=cfg.encoder_layers, dropout=cfg.dropout,
            stype_encoders=cfg.stype_encoders, time_types=spec.time_types,
            shallow={nt: spec.num_nodes[nt] for nt in cfg.shallow_types or []},
            stats_widths=widths, label_types=[seed_type] if cfg.past_labels else None,
            age_widths=_age_widths(spec) if cfg.timestamp_ages else None,
            numerical=cfg.numerical_encoding)
        self.gnn = HeteroGNN(spec.node_types, spec.edge_types, channels, cfg.num_layers,
                             out_types, gnn=cfg.gnn, aggr=cfg.aggr, heads=cfg.heads,
                             dropout=cfg.dropout)
        self.identity = torch.nn.Parameter(torch.randn(channels) * 0.1) if idgnn else None
        if self.rec_head is not None:
            head = TwoTowerHead if self.rec_head == "two_tower" else IDGNNHead
            self.head = head(channels, spec.num_nodes[item_type], cfg.head_layers,
                             _item_features(spec, item_type, channels, cfg.item_features))
        else:
            self.head = NodeHead(channels, out_channels, cfg.head_layers)
        self.seed_mlp = None
        if seed_features:
            if task_type == RECOMMENDATION:
                raise ValueError("seed_features feed the seed's embedding of a classification "
                                 "or regression head; a recommendation model takes none")
            self.seed_mlp = torch.nn.Sequential(
                torch.nn.Linear(seed_features, channels), torch.nn.ReLU(),
                torch.nn.Linear(channels, channels))
        self.num_layers = cfg.num_layers
        self.packer = BatchPacker(spec.metadata, seed_type, cfg.num_layers, trim=not idgnn,
                                  stats_widths=widths,
                                  label_type=seed_type if cfg.past_labels else None,
                                  timestamp_ages=cfg.timestamp_ages)

    @property
    def item_features(self) -> ItemFeatures | None:
        r"""The recommendation head's item columns, if it reads any."""
        return getattr(self.head, "item_features", None)

    def fill_item_features(self, graph: HeteroData) -> None:
        r"""Copies the item table's columns from :obj:`graph` into the head
        (a no-op for a model that reads none); needed once before training,
        a checkpoint carries them."""
        if self.item_features is not None:
            self.item_features.fill(graph[self.item_type].tf)

    def pack(self, batch: HeteroData) -> PackedBatch:
        r"""Packs a sampled mini-batch for :meth:`forward` (same as :attr:`packer`)."""
        return self.packer(batch)

    def forward(self, batch: PackedBatch) -> Tensor:
        if not isinstance(batch, PackedBatch):
            raise TypeError(f"{self.__class__.__name__} takes a PackedBatch (got "
                            f"{type(batch).__name__}); pass model.pack(batch), or use "
                            "model.packer as the loader's transform")
        x = self.encoder(batch)
        num_seeds = batch.seed_time.size(0)
        if self.identity is not None:  # ID-GNN: mark each subgraph's seed.
            seeds = x[self.seed_type]
            torch._check(num_seeds <= seeds.size(0))
            is_seed = torch.arange(seeds.size(0), device=seeds.device) < num_seeds
            x[self.seed_type] = seeds + is_seed.unsqueeze(-1).to(seeds.dtype) * self.identity
        x = self.gnn(x, batch)
        if self.rec_head == "idgnn":
            item = self.item_type
            return self.head(prefix(x[self.seed_type], num_seeds), x[item],
                             batch.seed_index[item], batch.node_id[item])
        h = prefix(x[self.seed_type], num_seeds)
        if self.seed_mlp is not None:
            if batch.seed_features is None:
                raise ValueError("This model reads per-seed features (the baseline's "
                                 "aggregates) and the batch has none")
            h = h + self.seed_mlp(batch.seed_features)
        return self.head(h)

    def __repr__(self) -> str:
        head = f", rec_head={self.rec_head!r}" if self.rec_head else ""
        return (f"{self.__class__.__name__}(task_type={self.task_type!r}, gnn={self.gnn_name!r}, "
                f"encoder={self.encoder_name!r}, num_layers={self.num_layers}{head})")


def _item_features(spec: GraphSpec, item_type: str, channels: int,
                   wanted: bool) -> ItemFeatures | None:
    columns = spec.col_names_dicts.get(item_type)
    if not wanted or not ItemFeatures.readable(columns):
        return None
    return ItemFeatures(spec.num_nodes[item_type], channels, columns,
                        spec.col_stats_dict[item_type])


def _age_widths(spec: GraphSpec) -> dict[str, int]:
    # Node type -> width of its timestamp ages, for the types with timestamp columns.
    widths = {nt: sum(len(cols) for st, cols in names.items()
                      if getattr(st, "value", st) == "timestamp") * FEATURES_PER_COLUMN
              for nt, names in spec.col_names_dicts.items()}
    return {nt: width for nt, width in widths.items() if width}


def _check_out_channels(task_type: str, out_channels: int) -> None:
    if task_type in (BINARY, REGRESSION) and out_channels != 1:
        raise ValueError(f"A {task_type} model has out_channels=1 (got {out_channels})")
    if task_type == MULTICLASS and out_channels < 2:
        raise ValueError(f"A multiclass model needs out_channels = number of classes >= 2 "
                         f"(got {out_channels})")
