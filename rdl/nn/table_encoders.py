"""Row encoders: the feature columns of one table -> one embedding per row.

``"mlp"`` (:class:`FusedRowEncoder`) is the right-sized default: each stype
contributes one ``[rows, channels]`` term computed with a single matrix product
or embedding sum, then one MLP. It has the expressiveness of PyTorch Frame's
per-column encoders followed by a flatten + linear layer (a linear map of
per-column linear encodings is again a per-column linear encoding) at a
fraction of the cost. ``"resnet"`` and ``"fttransformer"`` are PyTorch Frame's
backbones on :class:`~rdl.nn.stype_encoders.StypeWiseFeatureEncoder`, as in
RelBench.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Embedding, LayerNorm, Linear, ReLU, Sequential
from torch_frame.data.mapper import TimestampTensorMapper
from torch_frame.data.stats import StatType
from torch_frame.nn.conv import FTTransformerConvs
from torch_frame.nn.models.resnet import FCResidualBlock

from rdl.nn.stype_encoders import STYPES, StypeWiseFeatureEncoder, check_stypes, num_columns
from rdl.nn.trained_categories import TrainedCategories

ENCODERS = ("mlp", "resnet", "fttransformer")


class _Numerical(torch.nn.Module):
    # Standardised values (0 where missing) and missing flags -> one linear map.
    def __init__(self, stats: list[dict], channels: int):
        super().__init__()
        self.register_buffer("mean", torch.tensor([s[StatType.MEAN] for s in stats]))
        self.register_buffer("std", torch.tensor([s[StatType.STD] for s in stats]) + 1e-6)
        self.lin = Linear(2 * len(stats), channels, bias=False)

    def forward(self, feat: Tensor) -> Tensor:
        x = (feat - self.mean) / self.std
        finite = torch.isfinite(x)
        x = torch.where(finite, x, 0.0)
        return self.lin(torch.cat([x, (~finite).to(x.dtype)], dim=1))


class PiecewiseNumericalTerm(_Numerical):
    """Numerical columns -> the linear term plus a linear map of each value's
    place in its column's quartile bins (piecewise-linear encoding, Gorishniy
    et al. 2022): per bin 0 below it, 1 above it and the fraction between; a
    bin of zero width (many equal values) is a step. The first bin extends
    below the minimum and the last above the maximum, so unseen extremes keep
    a slope: ``[rows, columns] -> [rows, channels]``."""

    def __init__(self, stats: list[dict], channels: int):
        super().__init__(stats, channels)
        edges = torch.tensor([s[StatType.QUANTILES] for s in stats], dtype=torch.float32)
        edges = torch.nan_to_num(edges)
        lo, hi = edges[:, :-1], edges[:, 1:]
        width = hi - lo
        self.register_buffer("lo", lo)
        self.register_buffer("hi", hi)
        self.register_buffer("inv_width", torch.where(width > 0, 1 / width, 0.0))
        self.register_buffer("is_step", width <= 0)
        floor, ceil = torch.zeros(lo.size(1)), torch.ones(lo.size(1))
        floor[0], ceil[-1] = -math.inf, math.inf  # the outer bins are open
        self.register_buffer("floor", floor)
        self.register_buffer("ceil", ceil)
        self.bins = torch.nn.Linear(lo.numel(), channels, bias=False)

    def places(self, feat: Tensor) -> Tensor:
        """``[rows, columns] -> [rows, columns * bins]``; 0 where missing."""
        x = feat.unsqueeze(-1)
        ramp = torch.where(self.is_step, (x >= self.hi).to(x.dtype), (x - self.lo) * self.inv_width)
        ramp = torch.minimum(torch.maximum(ramp, self.floor), self.ceil)
        return torch.where(torch.isfinite(ramp), ramp, 0.0).flatten(1)

    def forward(self, feat: Tensor) -> Tensor:
        return super().forward(feat) + self.bins(self.places(feat))


class CategoricalTerm(TrainedCategories, torch.nn.Module):
    """Categorical columns -> the sum of their category embeddings, a missing
    code (-1) adding nothing, nor, outside training, a category no training
    batch held (:mod:`rdl.nn.trained_categories`):
    ``[rows, columns] -> [rows, channels]``."""

    def __init__(self, stats: list[dict], channels: int):
        super().__init__()
        sizes = [len(s[StatType.COUNT][0]) for s in stats]
        self.register_buffer("offset", torch.tensor([0, *sizes[:-1]]).cumsum(0))
        self.emb = Embedding(sum(sizes) + 1, channels, padding_idx=0)
        self.init_trained()

    def forward(self, feat: Tensor) -> Tensor:
        return self.emb(self.trained_index(torch.where(feat < 0, 0, feat + self.offset + 1))
                        ).sum(dim=1)


class _MultiCategorical(CategoricalTerm):
    # Per cell the mean of its categories' embeddings, summed over columns.
    def __init__(self, stats: list[dict], channels: int):
        super().__init__([{StatType.COUNT: s[StatType.MULTI_COUNT]} for s in stats], channels)

    def forward(self, values: Tensor, bag: Tensor, weight: Tensor, num_rows: int) -> Tensor:
        num_cols = self.offset.numel()
        index = self.trained_index(
            torch.where(values < 0, 0, values + self.offset[bag % num_cols] + 1))
        out = weight.new_zeros((num_rows, self.emb.embedding_dim))
        return out.index_add(0, torch.div(bag, num_cols, rounding_mode="floor"),
                             self.emb(index) * weight.unsqueeze(-1))


class _Timestamp(torch.nn.Module):
    # Year offset, sin/cos of the cyclic parts (month ... second) at a few
    # frequencies and a missing flag -> one linear map.
    def __init__(self, stats: list[dict], channels: int, num_frequencies: int = 2):
        super().__init__()
        years = [s[StatType.YEAR_RANGE] for s in stats]
        self.register_buffer("min_year", torch.tensor([float(y[0]) for y in years]))
        self.register_buffer("year_span", torch.tensor([float(y[1] - y[0] + 1) for y in years]))
        period = TimestampTensorMapper.CYCLIC_VALUES_NORMALIZATION_CONSTANT.float()
        self.register_buffer("angle", 2 * math.pi / period)
        self.register_buffer("freq", torch.arange(1, num_frequencies + 1).float())
        per_col = 2 + 2 * period.numel() * num_frequencies
        self.lin = Linear(per_col * len(stats), channels, bias=False)

    def forward(self, feat: Tensor) -> Tensor:  # [rows, cols, 7]
        missing = (feat < 0).any(dim=-1)
        feat = torch.where(missing.unsqueeze(-1), 0, feat).to(torch.float32)
        year = (feat[..., 0] - self.min_year) / self.year_span
        phase = (feat[..., 1:] * self.angle).unsqueeze(-1) * self.freq
        cyclic = torch.cat([phase.sin(), phase.cos()], dim=-1).flatten(2)
        keep = (~missing).to(feat.dtype).unsqueeze(-1)
        x = torch.cat([year.unsqueeze(-1) * keep, cyclic * keep, 1 - keep], dim=-1)
        return self.lin(x.flatten(1))


class _Embedding(torch.nn.Module):
    # Pre-computed embedding columns -> one linear map.
    def __init__(self, stats: list[dict], channels: int):
        super().__init__()
        self.lin = Linear(sum(s[StatType.EMB_DIM] for s in stats), channels, bias=False)

    def forward(self, feat: Tensor) -> Tensor:
        return self.lin(torch.where(torch.isfinite(feat), feat, 0.0))


FUSED_PARTS = {"numerical": _Numerical, "categorical": CategoricalTerm,
               "multicategorical": _MultiCategorical, "timestamp": _Timestamp,
               "embedding": _Embedding}
assert set(FUSED_PARTS) == set(STYPES)
_NUMERICAL = {"linear": _Numerical, "piecewise": PiecewiseNumericalTerm}
NUMERICAL_ENCODINGS = tuple(_NUMERICAL)


def _blocks(channels: int, num_layers: int, dropout: float) -> Sequential:
    # LayerNorm, ReLU, then (Linear, LayerNorm, ReLU) num_layers - 1 times.
    layers: list[torch.nn.Module] = []
    for i in range(max(num_layers, 1)):
        if i > 0:
            layers.append(Linear(channels, channels))
        layers += [LayerNorm(channels), ReLU()]
        if dropout > 0:
            layers.append(torch.nn.Dropout(dropout))
    return Sequential(*layers)


class FusedRowEncoder(torch.nn.Module):
    r"""Right-sized row encoder: one linear term per stype (a matrix product
    or an embedding sum), summed, then LayerNorm and ReLU; :obj:`num_layers`
    above 1 adds (Linear, LayerNorm, ReLU) blocks. It ends in a nonlinearity,
    not a linear layer: the model's next step (time encoding, message
    passing) starts with linear maps that would absorb it.

    Args:
        channels (int): Output channels.
        col_stats (dict): Column -> PyTorch Frame stats.
        col_names_dict (dict): stype -> column names.
        num_layers (int, optional): Nonlinear blocks. (default: :obj:`1`)
        dropout (float, optional): Dropout in the MLP. (default: :obj:`0.0`)
        table (str, optional): Node type, for error messages. (default: ``"?"``)
        numerical (str, optional): ``"linear"`` (standardised values) or
            ``"piecewise"`` (also each value's place in its column's quartile
            bins). (default: ``"linear"``)
    """

    def __init__(self, channels: int, col_stats: dict, col_names_dict: dict,
                 num_layers: int = 1, dropout: float = 0.0, table: str = "?",
                 numerical: str = "linear"):
        super().__init__()
        check_stypes(table, col_names_dict, FUSED_PARTS)
        parts = dict(FUSED_PARTS, numerical=_NUMERICAL[numerical])
        self.parts = torch.nn.ModuleDict({
            st.value: parts[st.value]([col_stats[c] for c in cols], channels)
            for st, cols in col_names_dict.items()
        })
        self.bias = torch.nn.Parameter(torch.zeros(channels))
        self.mlp = _blocks(channels, num_layers, dropout)

    def forward(self, feats: dict[str, Tensor], num_rows: int) -> Tensor:
        out = self.bias.expand(num_rows, -1)
        for st, part in self.parts.items():
            if st == "multicategorical":
                x = part(feats[st], feats[f"{st}_bag"], feats[f"{st}_weight"], num_rows)
            else:
                x = part(feats[st])
            torch._check(x.size(0) == num_rows)
            out = out + x
        return self.mlp(out)


class FrameRowEncoder(torch.nn.Module):
    r"""PyTorch Frame's :obj:`"resnet"` (flatten, FC residual blocks) or
    :obj:`"fttransformer"` (transformer over columns, CLS token) backbone on a
    :class:`~rdl.nn.stype_encoders.StypeWiseFeatureEncoder`, each followed by
    PyTorch Frame's decoder (LayerNorm, ReLU, Linear), as in RelBench.

    Args:
        backbone (str): :obj:`"resnet"` or :obj:`"fttransformer"`.
        channels (int): Channels of column embeddings and output.
        col_stats (dict): Column -> PyTorch Frame stats.
        col_names_dict (dict): stype -> column names.
        num_layers (int, optional): Backbone layers. (default: :obj:`2`)
        dropout (float, optional): Dropout of the ResNet blocks. (default: :obj:`0.0`)
        stype_encoders (dict, optional): stype -> encoder name overrides.
        table (str, optional): Node type, for error messages.
    """

    def __init__(self, backbone: str, channels: int, col_stats: dict, col_names_dict: dict,
                 num_layers: int = 2, dropout: float = 0.0,
                 stype_encoders: dict[str, str] | None = None, table: str = "?"):
        super().__init__()
        self.backbone_name = backbone
        self.encoder = StypeWiseFeatureEncoder(channels, col_stats, col_names_dict,
                                               stype_encoders, table)
        if backbone == "resnet":
            in_channels = channels * num_columns(col_names_dict)
            self.backbone = Sequential(*[
                FCResidualBlock(in_channels if i == 0 else channels, channels,
                                normalization="layer_norm", dropout_prob=dropout)
                for i in range(num_layers)])
            if num_layers == 0:
                self.backbone = Linear(in_channels, channels)
        else:
            self.backbone = FTTransformerConvs(channels, num_layers=num_layers,
                                               dropout=dropout)
        self.decoder = Sequential(LayerNorm(channels), ReLU(), Linear(channels, channels))

    def forward(self, feats: dict[str, Tensor], num_rows: int) -> Tensor:
        x = self.encoder(feats, num_rows)
        if self.backbone_name == "resnet":
            x = self.backbone(x.flatten(1))
        else:
            x = _ft_transformer(self.backbone, x)
        return self.decoder(x)


def _ft_transformer(convs: FTTransformerConvs, x: Tensor) -> Tensor:
    # FTTransformerConvs.forward (CLS token, post-norm encoder layers) written
    # out with plain matrix products: Inductor cannot compile the fused
    # attention's backward, nor repeat's, with unbacked batch sizes.
    x = torch.cat([convs.cls_embedding.expand(x.size(0), 1, -1), x], dim=1)
    rows, cols, channels = x.shape
    for layer in convs.transformer.layers:
        attn = layer.self_attn
        heads = attn.num_heads
        qkv = F.linear(x, attn.in_proj_weight, attn.in_proj_bias)
        q, k, v = qkv.view(rows, cols, 3, heads, channels // heads).permute(2, 0, 3, 1, 4)
        score = (q @ k.transpose(-1, -2)) * (channels // heads) ** -0.5
        weight = F.dropout(score.softmax(dim=-1), attn.dropout, layer.training)
        h = (weight @ v).transpose(1, 2).reshape(rows, cols, channels)
        x = layer.norm1(x + layer.dropout1(attn.out_proj(h)))
        h = layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))
        x = layer.norm2(x + layer.dropout2(h))
    return convs.transformer.norm(x)[:, 0]


def row_encoder(encoder: str, channels: int, col_stats: dict, col_names_dict: dict, *,
                num_layers: int, dropout: float, stype_encoders: dict[str, str] | None,
                table: str, numerical: str = "linear") -> torch.nn.Module:
    r"""Builds the row encoder named :obj:`encoder` (one of :obj:`ENCODERS`);
    :obj:`numerical` applies to ``"mlp"`` (the others take ``stype_encoders``)."""
    if encoder == "mlp":
        return FusedRowEncoder(channels, col_stats, col_names_dict, num_layers, dropout, table,
                               numerical)
    if encoder in ("resnet", "fttransformer"):
        return FrameRowEncoder(encoder, channels, col_stats, col_names_dict, num_layers,
                               dropout, stype_encoders, table)
    raise ValueError(f"Unknown encoder={encoder!r}; valid choices are {list(ENCODERS)}")
