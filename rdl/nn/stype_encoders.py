"""PyTorch Frame's stype encoders, reading :class:`~rdl.nn.PackedBatch` tensors
and free of what :func:`torch.compile` cannot trace with unbacked batch sizes.

Each class keeps its PyTorch Frame parent's parameters and maths; only the
operations change: no ``einsum``/``bmm`` over rows (Inductor cannot lower them
with unbacked sizes), no boolean-mask assignment, no data-dependent asserts.
Missing values: numerical NaN and +-inf get the column mean, categorical ``-1``
and missing multicategorical values a zero embedding, missing timestamps the
median timestamp, non-finite embedding entries zero.
"""
from __future__ import annotations

import math
from typing import Any

import torch
import torch_frame
import torch_frame.nn as frame_nn
from torch import Tensor
from torch_frame import NAStrategy, stype
from torch_frame.data.stats import StatType
from torch_frame.nn.encoder.stype_encoder import StypeEncoder

from rdl.nn.trained_categories import TrainedCategories

STYPES = ("numerical", "categorical", "multicategorical", "timestamp", "embedding")


class LinearEncoder(frame_nn.LinearEncoder):
    r""":class:`torch_frame.nn.LinearEncoder` with mean imputation of NaN and
    +-inf."""

    def __init__(self, out_channels: int | None = None, stats_list: list | None = None,
                 stype: stype | None = None, post_module: torch.nn.Module | None = None,
                 na_strategy: NAStrategy | None = NAStrategy.MEAN):
        super().__init__(out_channels, stats_list, stype, post_module, na_strategy)

    def na_forward(self, feat: Tensor) -> Tensor:
        return torch.where(torch.isfinite(feat), feat, self.fill_values.to(feat.dtype))

    def encode_forward(self, feat: Tensor, col_names: list[str] | None = None) -> Tensor:
        feat = (feat - self.mean) / self.std
        return feat.unsqueeze(-1) * self.weight + self.bias


class EmbeddingEncoder(TrainedCategories, frame_nn.EmbeddingEncoder):
    r""":class:`torch_frame.nn.EmbeddingEncoder`; category ``-1`` (missing) maps
    to the zero padding embedding, and so, outside training, does a category
    no training batch held (:mod:`rdl.nn.trained_categories`)."""

    def init_modules(self) -> None:
        super().init_modules()
        self.init_trained()

    def encode_forward(self, feat: Tensor, col_names: list[str] | None = None) -> Tensor:
        return self.emb(self.trained_index(torch.where(feat < 0, 0, feat + self.offset + 1)))


class TimestampEncoder(frame_nn.TimestampEncoder):
    r""":class:`torch_frame.nn.TimestampEncoder` with per-column matrix products
    instead of an ``einsum`` over rows."""

    def na_forward(self, feat: Tensor) -> Tensor:
        missing = (feat < 0).any(dim=-1, keepdim=True)
        return torch.where(missing, self.fill_values.to(feat.dtype), feat)

    def encode_forward(self, feat: Tensor, col_names: list[str] | None = None) -> Tensor:
        feat = feat.to(torch.float32)
        year = (feat[..., :1] - self.min_year.view(1, -1, 1)).clamp(min=0)
        rest = feat[..., 1:] / self.max_values.view(1, 1, -1)
        pos = year.unsqueeze(-1) * self.positional_encoding.mult_term
        cyc = rest.unsqueeze(-1) * self.cyclic_encoding.mult_term
        x = torch.cat([
            torch.cat([torch.sin(pos), torch.cos(pos)], dim=-1),
            torch.cat([torch.sin(cyc * math.pi), torch.cos(cyc * 2 * math.pi)], dim=-1),
        ], dim=2)  # [rows, cols, 7, out_size]
        outs = [x[:, j].flatten(1) @ self.weight[j].flatten(0, 1) for j in range(x.size(1))]
        return torch.stack(outs, dim=1) + self.bias


class LinearEmbeddingEncoder(frame_nn.LinearEmbeddingEncoder):
    r""":class:`torch_frame.nn.LinearEmbeddingEncoder` reading the embedding
    columns as one dense ``[rows, sum of dims]`` tensor."""

    def encode_forward(self, feat: Tensor, col_names: list[str] | None = None) -> Tensor:
        feat = torch.where(torch.isfinite(feat), feat, 0.0)
        outs, start = [], 0
        for dim, weight in zip(self.emb_dim_list, self.weight_list):
            outs.append(feat[:, start:start + dim] @ weight)
            start += dim
        return torch.stack(outs, dim=1) + self.biases


class MultiCategoricalEmbeddingEncoder(TrainedCategories, StypeEncoder):
    r"""Mean of the category embeddings of each multicategorical cell, like
    :class:`torch_frame.nn.MultiCategoricalEmbeddingEncoder` (one table for
    all columns, row ``0`` the zero padding, which outside training a category
    no training batch held reads too). Reads ``(values, bag, weight,
    num_rows)`` from :class:`~rdl.nn.PackedBatch`."""

    supported_stypes = {stype.multicategorical}

    def init_modules(self) -> None:
        super().init_modules()
        sizes = [len(stats[StatType.MULTI_COUNT][0]) for stats in self.stats_list]
        self.emb = torch.nn.Embedding(sum(sizes) + 1, self.out_channels, padding_idx=0)
        self.register_buffer("offset", torch.tensor([0, *sizes[:-1]]).cumsum(0))
        self.init_trained()
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        self.emb.reset_parameters()

    def encode_forward(self, feat: tuple[Tensor, Tensor, Tensor, int],
                       col_names: list[str] | None = None) -> Tensor:
        values, bag, weight, num_rows = feat
        num_cols = self.offset.numel()
        index = self.trained_index(
            torch.where(values < 0, 0, values + self.offset[bag % num_cols] + 1))
        out = values.new_zeros((num_rows * num_cols, self.out_channels), dtype=torch.float32)
        out = out.index_add(0, bag, self.emb(index) * weight.unsqueeze(-1))
        return out.view(num_rows, num_cols, self.out_channels)


STYPE_ENCODERS: dict[str, type[StypeEncoder]] = {
    "linear": LinearEncoder,
    "embedding": EmbeddingEncoder,
    "multicategorical_embedding": MultiCategoricalEmbeddingEncoder,
    "timestamp": TimestampEncoder,
    "linear_embedding": LinearEmbeddingEncoder,
}
DEFAULT_STYPE_ENCODERS: dict[str, str] = {
    "numerical": "linear",
    "categorical": "embedding",
    "multicategorical": "multicategorical_embedding",
    "timestamp": "timestamp",
    "embedding": "linear_embedding",
}


def resolve_stype_encoders(overrides: dict[str, str] | None = None) -> dict[str, str]:
    r"""The default stype -> encoder name mapping updated by :obj:`overrides`,
    checked."""
    mapping = dict(DEFAULT_STYPE_ENCODERS)
    for st, name in (overrides or {}).items():
        if st not in STYPES:
            raise ValueError(f"stype_encoders names the stype {st!r}; valid stypes are "
                             f"{list(STYPES)}")
        if name not in STYPE_ENCODERS:
            raise ValueError(f"stype_encoders[{st!r}]={name!r} is not an encoder; valid "
                             f"encoders are {list(STYPE_ENCODERS)}")
        if stype(st) not in STYPE_ENCODERS[name].supported_stypes:
            raise ValueError(f"stype_encoders[{st!r}]={name!r} cannot encode {st} columns")
        mapping[st] = name
    return mapping


def check_stypes(table: str, col_names_dict: dict[Any, list[str]], supported) -> None:
    r"""Raises a :class:`ValueError` naming the first column whose stype is not
    in :obj:`supported`."""
    for st, cols in col_names_dict.items():
        name = st.value if isinstance(st, stype) else str(st)
        if name not in supported and cols:
            raise ValueError(
                f"Column {cols[0]!r} of node type {table!r} has stype {name!r}, which no "
                f"encoder handles; encoders exist for {sorted(supported)} (exclude the "
                f"column or change its stype)")


class StypeWiseFeatureEncoder(frame_nn.StypeWiseFeatureEncoder):
    r""":class:`torch_frame.nn.StypeWiseFeatureEncoder` over the feature dict of
    :class:`~rdl.nn.PackedBatch` instead of a :class:`~torch_frame.TensorFrame`.

    Args:
        out_channels (int): Channels of each column embedding.
        col_stats (dict): Column -> PyTorch Frame stats.
        col_names_dict (dict): stype -> column names, as in the TensorFrame.
        stype_encoders (dict, optional): stype name -> encoder name overriding
            :obj:`DEFAULT_STYPE_ENCODERS`. (default: :obj:`None`)
        table (str, optional): Node type, for error messages. (default: ``"?"``)
    """

    def __init__(self, out_channels: int, col_stats: dict, col_names_dict: dict,
                 stype_encoders: dict[str, str] | None = None, table: str = "?"):
        mapping = resolve_stype_encoders(stype_encoders)
        check_stypes(table, col_names_dict, mapping)
        encoders = {stype(st): STYPE_ENCODERS[mapping[st.value]]() for st in col_names_dict}
        super().__init__(out_channels, col_stats, col_names_dict, encoders)
        self.stypes = [st.value for st in col_names_dict]

    def forward(self, feats: dict[str, Tensor], num_rows: int) -> Tensor:  # type: ignore[override]
        xs = []
        for st in self.stypes:
            if st == "multicategorical":
                feat = (feats[st], feats[f"{st}_bag"], feats[f"{st}_weight"], num_rows)
            else:
                feat = feats[st]
            x = self.encoder_dict[st](feat)
            torch._check(x.size(0) == num_rows)
            xs.append(x)
        return torch.cat(xs, dim=1)


def num_columns(col_names_dict: dict[torch_frame.stype, list[str]]) -> int:
    return sum(len(cols) for cols in col_names_dict.values())
