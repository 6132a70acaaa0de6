"""The model's settings, declared once: the config's ``model.net`` section, the
:class:`~rdl.nn.RelationalModel`'s arguments and what a checkpoint stores."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from rdl.nn.gnn import GNNS
from rdl.nn.keys import check_choice
from rdl.nn.messages import AGGREGATIONS
from rdl.nn.stype_encoders import STYPE_ENCODERS
from rdl.nn.table_encoders import ENCODERS, NUMERICAL_ENCODINGS
from rdl.tasks.task_types import BINARY

REC_HEADS = ("two_tower", "idgnn")


class SettingsError(ValueError):
    """A model setting that cannot be built (``rdl`` reports it in one line)."""


@dataclass(frozen=True)
class ModelSettings:
    r"""What the model looks like; every field is checked when it is built.

    Args:
        channels (int): Hidden channels. (default: :obj:`64`)
        gnn (str): ``"sage"``, ``"gat"`` or ``"hgt"``. (default: ``"sage"``)
        num_layers (int): Message passing layers; give the data one fan-out
            per layer. (default: :obj:`2`)
        aggr (str): ``"mean"``, ``"sum"``, ``"max"``, ``"last"`` (the newest
            neighbour before the seed) or a ``+``-joined combination (e.g.
            ``"mean+last"``): neighbour aggregation of ``"sage"``. ``"auto"``
            is ``"mean+last"`` for binary tasks, where it gained 0.5 to 1.7
            AUROC points on the four bundled churn tasks and moved the other
            four by -0.15 to +0.0, and ``"mean"`` otherwise: it lost 0.7-4.5%
            of MAP on all three recommendation tasks, and on the regression
            tasks 1.8 r2 points on the small shop's customer value against
            +0.3 on the large shop's and -0.0 on airport arrivals
            (benchmarks/REPORT.md).
            (default: ``"auto"``)
        heads (int): Attention heads of ``"gat"``/``"hgt"``. (default: :obj:`4`)
        dropout (float): Dropout. (default: :obj:`0.0`)
        encoder (str): Row encoder: ``"mlp"`` (right-sized, fused per stype),
            ``"resnet"`` or ``"fttransformer"`` (PyTorch Frame).
            (default: ``"mlp"``)
        encoder_layers (int): Layers of the row encoder. (default: :obj:`1`)
        numerical_encoding (str): Numerical columns in the ``"mlp"`` row
            encoder: ``"linear"`` (standardised) or ``"piecewise"`` (also
            each value's place in its column's quartile bins, so a skewed
            column's common small values stay apart). Test AUROC against
            ``"linear"``, 3 seeds: +0.7 and +0.2 on two real databases,
            -0.5 and -1.4 on a third's two tasks, -0.2 and -0.6 on the small
            shops (benchmarks/REPORT.md). (default: ``"linear"``)
        stype_encoders (dict, optional): stype -> PyTorch Frame encoder name
            for ``"resnet"``/``"fttransformer"`` (e.g. ``{numerical:
            linear}``), overriding the defaults. (default: :obj:`None`)
        head_layers (int): Layers of the output head. (default: :obj:`1`)
        rec_head (str): Recommendation head: ``"two_tower"`` or ``"idgnn"``
            (two-tower scores of every item plus ID-GNN scores of the items in
            the seed's subgraph). (default: ``"two_tower"``)
        item_features (bool): Recommendation: each item's embedding in the
            head also reads the item table's categorical columns
            (:class:`~rdl.nn.heads.ItemFeatures`), so items of the same kind
            start alike. (default: :obj:`True`)
        shallow_types (list[str], optional): Tables (node types) whose rows
            also get a learned embedding each (e.g. ``[articles]``).
            (default: :obj:`None`)
        temporal_stats (bool): Give every node its temporal in-degrees, window
            counts and recency per incoming edge type, counted over all its
            neighbours, not only the sampled ones; the loader must apply
            :class:`~rdl.sampling.TemporalNodeStats`. (default: :obj:`True`)
        past_labels (bool): Event-level binary and regression tasks: show the
            model the labels of seed-table rows older than the one it predicts
            (e.g. earlier fraud on the same device). Off by default: on the
            bundled event-level tasks it moved test AUROC by -1.0 (retail
            fraud) and +0.5 points (flight cancellation), means of 3 and 2
            seeds. (default: :obj:`False`)
        timestamp_ages (bool): Give every node the age of each of its
            timestamp values at its seed time (days since a signup date or a
            debut), as the LightGBM baseline sees them; the row encoder reads
            only the dates. Off by default: on a baseball archive's pitchers
            it left validation and test AUROC unchanged (3 seeds), and the
            bundled databases date nothing but their time columns.
            (default: :obj:`False`)
    """

    channels: int = 64
    gnn: str = "sage"
    num_layers: int = 2
    aggr: str = "auto"
    heads: int = 4
    dropout: float = 0.0
    encoder: str = "mlp"
    encoder_layers: int = 1
    numerical_encoding: str = "linear"
    stype_encoders: dict[str, str] | None = None
    head_layers: int = 1
    rec_head: str = "two_tower"
    item_features: bool = True
    shallow_types: list[str] | None = None
    temporal_stats: bool = True
    past_labels: bool = False
    timestamp_ages: bool = False

    def __post_init__(self) -> None:
        try:
            self._check()
        except ValueError as exc:
            raise SettingsError(f"model setting {exc}") from None

    def _check(self) -> None:
        check_choice("gnn", self.gnn, GNNS)
        check_choice("encoder", self.encoder, ENCODERS)
        check_choice("numerical_encoding", self.numerical_encoding, NUMERICAL_ENCODINGS)
        if self.numerical_encoding != "linear" and self.encoder != "mlp":
            raise ValueError(f"numerical_encoding={self.numerical_encoding!r} is for the "
                             f"'mlp' encoder; {self.encoder!r} takes stype_encoders")
        check_choice("rec_head", self.rec_head, REC_HEADS)
        if self.aggr != "auto":
            for kind in str(self.aggr).split("+"):
                if kind == "auto":
                    raise ValueError(f"aggr={self.aggr!r}: 'auto' picks the whole "
                                     "aggregation and is not joined with others")
                check_choice("aggr", kind, AGGREGATIONS)
        for name, minimum in (("channels", 1), ("num_layers", 0), ("heads", 1),
                              ("encoder_layers", 1), ("head_layers", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"{name}={value!r} must be a whole number >= {minimum}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout={self.dropout!r} must lie in [0, 1)")
        for stype, name in (self.stype_encoders or {}).items():
            check_choice(f"stype_encoders[{stype!r}]", name, STYPE_ENCODERS)

    @classmethod
    def coerce(cls, value: ModelSettings | dict | None = None, **overrides) -> ModelSettings:
        """``value`` as settings (a dict from a config or checkpoint, settings
        or ``None`` for the defaults), with ``overrides`` on top; an unknown
        name is an error that lists the valid ones."""
        if isinstance(value, cls):
            settings = value
        else:
            given = dict(value or {})
            _check_names(given)
            settings = cls(**given)
        _check_names(overrides)
        return replace(settings, **overrides) if overrides else settings

    def resolved(self, task_type: str) -> ModelSettings:
        """These settings with ``aggr: auto`` made concrete for ``task_type``."""
        if self.aggr != "auto":
            return self
        return replace(self, aggr="mean+last" if task_type == BINARY else "mean")

    def to_plain(self) -> dict:
        """A dict of plain values (for checkpoints read with ``weights_only``)."""
        return asdict(self)


def settings_names() -> list[str]:
    return [f.name for f in fields(ModelSettings)]


def _check_names(given: dict) -> None:
    unknown = sorted(set(given) - set(settings_names()))
    if unknown:
        raise SettingsError(f"unknown model setting(s) {unknown}; valid ones are "
                            f"{settings_names()}")
