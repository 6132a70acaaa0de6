"""All node types -> initial node embeddings: a row encoder per table with
features (run once per distinct row, then gathered to the nodes), a learned
vector for tables without features, optional shallow embeddings, a
relative-time encoding for timed tables and, optionally, the temporal
neighbour counts and recency of every node and the ages of its timestamps."""
from __future__ import annotations

import math

import torch
from torch import Tensor
from torch.nn import Embedding, Linear, ModuleDict, Parameter, ParameterDict, ReLU, Sequential

from rdl.nn.batch import PackedBatch
from rdl.nn.keys import type_key
from rdl.nn.table_encoders import row_encoder


class RelativeTimeEncoder(torch.nn.Module):
    r"""Encodes how long before its seed each node happened: ``sin`` and ``cos``
    of the time difference (in days) at :obj:`num_frequencies` geometric
    periods from one hour to :obj:`max_period` days, and ``log1p`` of it, then a
    linear map per node type.

    Args:
        node_types (list[str]): Timed node types.
        channels (int): Output channels.
        num_frequencies (int, optional): Number of periods. (default: :obj:`8`)
        max_period (float, optional): Longest period in days. (default: :obj:`1000.0`)

    Shapes:
        - **input:** time differences :math:`(N,)` in days
        - **output:** :math:`(N, C)`
    """

    def __init__(self, node_types: list[str], channels: int, num_frequencies: int = 8,
                 max_period: float = 1000.0):
        super().__init__()
        periods = torch.logspace(math.log10(1 / 24), math.log10(max_period), num_frequencies)
        self.register_buffer("omega", 2 * math.pi / periods)
        self.lin = ModuleDict({type_key(nt): Linear(2 * num_frequencies + 1, channels)
                               for nt in node_types})

    def forward(self, node_type: str, rel_time: Tensor) -> Tensor:
        t = rel_time.unsqueeze(-1)
        phase = t * self.omega
        x = torch.cat([phase.sin(), phase.cos(), torch.log1p(t.clamp(min=0))], dim=-1)
        return self.lin[type_key(node_type)](x)


class HeteroEncoder(torch.nn.Module):
    r"""Initial embedding of every node of a :class:`~rdl.nn.PackedBatch`.

    Args:
        node_types (list[str]): All node types.
        col_names_dicts (dict): Node type -> stype -> column names, for the
            types with features.
        col_stats_dict (dict): Node type -> column -> PyTorch Frame stats.
        channels (int): Embedding channels.
        encoder (str, optional): Row encoder, see :obj:`rdl.nn.ENCODERS`.
            (default: :obj:`"mlp"`)
        encoder_layers (int, optional): Layers of the row encoder. (default: :obj:`1`)
        dropout (float, optional): Dropout in the row encoders. (default: :obj:`0.0`)
        stype_encoders (dict, optional): stype -> encoder name overrides for
            the PyTorch Frame encoders. (default: :obj:`None`)
        time_types (list[str], optional): Node types with times. (default: none)
        shallow (dict, optional): Node type -> number of nodes, for the types
            that get a learned embedding per node. (default: none)
        stats_widths (dict, optional): Node type -> width of its temporal
            neighbour statistics (:attr:`PackedBatch.node_stats`), each
            encoded by a two-layer MLP and added. (default: none)
        label_types (list[str], optional): Node types whose rows show their
            past label (:attr:`PackedBatch.past_label`), linearly encoded and
            added. (default: none)
        age_widths (dict, optional): Node type -> width of its timestamp
            ages (:attr:`PackedBatch.ages`), each encoded by a two-layer MLP
            and added. (default: none)
        numerical (str, optional): Numerical columns' encoding in the
            ``"mlp"`` row encoder, see :class:`~rdl.nn.table_encoders.FusedRowEncoder`.
            (default: ``"linear"``)
    """

    def __init__(self, node_types: list[str], col_names_dicts: dict, col_stats_dict: dict,
                 channels: int, *, encoder: str = "mlp", encoder_layers: int = 1,
                 dropout: float = 0.0, stype_encoders: dict[str, str] | None = None,
                 time_types: list[str] | None = None, shallow: dict[str, int] | None = None,
                 stats_widths: dict[str, int] | None = None,
                 label_types: list[str] | None = None,
                 age_widths: dict[str, int] | None = None, numerical: str = "linear"):
        super().__init__()
        self.node_types = list(node_types)
        self.rows = ModuleDict({
            type_key(nt): row_encoder(encoder, channels, col_stats_dict[nt], col_names_dicts[nt],
                            num_layers=encoder_layers, dropout=dropout,
                            stype_encoders=stype_encoders, table=nt, numerical=numerical)
            for nt in self.node_types if nt in col_names_dicts
        })
        self.featureless = ParameterDict({
            type_key(nt): Parameter(torch.randn(channels) * 0.1)
            for nt in self.node_types if nt not in col_names_dicts
        })
        self.shallow = ModuleDict({type_key(nt): Embedding(num, channels)
                                   for nt, num in (shallow or {}).items()})
        for emb in self.shallow.values():
            torch.nn.init.normal_(emb.weight, std=0.1)
        self.time = RelativeTimeEncoder(list(time_types or []), channels)
        self.stats = _mlps(stats_widths, channels)
        self.ages = _mlps(age_widths, channels)
        self.past_label = ModuleDict({type_key(nt): Linear(2, channels)
                                      for nt in label_types or []})

    def forward(self, batch: PackedBatch) -> dict[str, Tensor]:
        out = {}
        for nt in self.node_types:
            key = type_key(nt)
            rows, gather = batch.rows[nt], batch.gather[nt]
            if key in self.rows:
                h = self.rows[key](batch.features[nt], rows.size(0))
                if key in self.shallow:
                    h = h + self.shallow[key](rows)
                x = h.index_select(0, gather)
            elif key in self.shallow:
                x = self.shallow[key](rows.index_select(0, gather)) + self.featureless[key]
            else:
                x = self.featureless[key].expand(gather.size(0), -1)
            if key in self.time.lin:
                x = x + self.time(nt, batch.rel_time[nt])
            if key in self.stats:
                x = x + self.stats[key](batch.node_stats[nt])
            if key in self.ages:
                x = x + self.ages[key](batch.ages[nt])
            if key in self.past_label:
                x = x + self.past_label[key](batch.past_label[nt])
            out[nt] = x
        return out


def _mlps(widths: dict[str, int] | None, channels: int) -> ModuleDict:
    # Node type -> two-layer MLP from its `width` inputs, for the nonzero widths.
    return ModuleDict({
        type_key(nt): Sequential(Linear(width, channels), ReLU(), Linear(channels, channels))
        for nt, width in (widths or {}).items() if width > 0})
