r"""Why a model predicted what it did for one entity: occlusion over the
subgraph the model saw.

The seed is sampled, packed and run as :class:`~rdl.predict.Predictor` does;
then parts of that subgraph are occluded one at a time (set to typical values
or taken away) and the model run again. The **effect** of a part is the
model's output as it was minus its output with the part occluded: what the
part moved the prediction by, in the units of the output explained (the GNN's: a LightGBM blend, see
:mod:`rdl.train.blend`, moves by the GNN's share of each effect):

* binary: the logit (log-odds; ``+1`` multiplies the odds by e);
* regression: the predicted value, in the label's units;
* multiclass: the log-probability of the predicted class;
* recommendation: the model's score of one item (the top recommendation
  unless given), before any bonus for items the entity already had.

Three kinds of part, the ``level`` of each row of :func:`explain`'s frame:

* ``column``: the column takes its typical value in every sampled row of its
  table: numerical columns their training mean, categorical ones their most
  common category, timestamps the median time, tag lists none and embedding
  columns zeros.
* ``table``: all the table's columns at once, as for a column: what the
  table's values said, against those of typical rows. Tables without
  feature columns have no table (or column) effect; what their rows' mere
  presence said shows at the row level.
* ``row``: one sampled row (all its copies in the subgraph) leaves it: its
  edges are cut, so nothing flows from it (the neighbour counts of the
  other rows still count it). The entity's own row stays.

Tables and columns are set to typical values rather than taken away: a
subgraph without any order is one the model may never have seen, and its
answer to it says little (a customer predicted not to buy much looks the
same with small orders as with none, so taking away the orders would
seemingly not matter). Occlusion rather than gradients, because each effect
is a change of the output that really happens, in its own units, and parts
the model ignores get exactly zero. Effects do not add up: parts can stand
in for each other (two rows that say the same thing each move the output
little).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import torch
from matplotlib.figure import Figure
from torch import Tensor
from torch_frame.data.stats import StatType
from torch_geometric.data import HeteroData

from rdl.graph import SECONDS_PER_DAY
from rdl.nn.batch import PackedBatch
from rdl.tasks import task_types as types
from rdl.train.plots import new_figure, save_figure

LEVELS = ("table", "column", "row")
COLUMNS = ["level", "table", "column", "row", "days_before", "effect"]


@torch.no_grad()
def explain(predictor, id, at: str | pd.Timestamp, item=None) -> pd.DataFrame:
    r"""Occlusion effects on the prediction for entity ``id`` at time ``at``.

    Returns one row per table, feature column and sampled row of the
    entity's subgraph: ``[level, table, column, row, days_before, effect]``
    (``row``: the row's key; ``days_before``: how long before ``at`` its time
    lies, for timed tables), by level (``table``, ``column``, ``row``) and
    then by ``|effect|``, largest first. ``attrs`` holds ``id``, ``at``, the
    ``output`` explained and what it is (``explained``, e.g. ``"logit"``).
    See the module's docstring for what an effect is.

    Args:
        predictor (Predictor): The trained model and its database.
        id: The entity's key value.
        at (str or Timestamp): The prediction time.
        item (optional): Recommendation: the item whose score to explain
            (default: the entity's top recommendation).
    """
    blend = predictor.module.blend
    if blend is not None:
        warnings.warn(f"This model's predictions blend the GNN with LightGBM (GNN share "
                      f"{blend.gnn_share:.2f}): the effects are the GNN's and move the blended "
                      "prediction by that share of them; LightGBM's part is not explained",
                      stacklevel=2)
    seeds = predictor._seeds([id], at)
    batch = next(iter(predictor.datamodule.loader(seeds, pack=False))).inputs
    model = predictor.module.model
    pack = model.packer
    aggregates = predictor.module.baseline_features
    if aggregates is not None:
        warnings.warn("This model also reads the baseline's aggregates of the entity "
                      "(model.baseline_features); they are held fixed here, and their effect "
                      "is not explained", stacklevel=2)
        fixed = aggregates.compute(predictor.db, predictor.info.make_task(), seeds)

        def pack(sampled: HeteroData) -> PackedBatch:
            return dataclasses.replace(model.packer(sampled), seed_features=fixed)
    out = model(pack(batch))
    read, explained = _readout(predictor, id, at, item, out)
    run, base = _Runner(model, read, pack), read(out)
    graph, seed_type = predictor.graph, predictor.info.seed_type
    present = [nt for nt in batch.node_types if batch[nt].num_nodes > 0]
    columns = {nt: _columns(model.spec, nt) for nt in present}
    rows = [("table", nt, None, None, math.nan, base - run(batch, nt, columns[nt]))
            for nt in present if columns[nt]]
    rows += [("column", nt, column, None, math.nan, base - run(batch, nt, [column]))
             for nt in present for column in columns[nt]]
    for nt in present:
        n_id = batch[nt].n_id
        distinct = n_id.unique().tolist()
        for row, key in zip(distinct, graph.key_index[nt][distinct].tolist()):
            removed = n_id == row
            if nt == seed_type:
                removed[0] = False  # the entity's own row stays
            if removed.any():
                rows.append(("row", nt, None, key, _days_before(graph, nt, row, seeds.time[0]),
                             base - run(_without(batch, nt, removed))))
    return _frame(rows, graph, explained=explained, output=base, id=id, at=pd.Timestamp(at))


def plot_explanation(explanation: pd.DataFrame, top: int = 10,
                     path: str | Path | None = None) -> Figure:
    r"""Horizontal bars of the ``top`` largest effects of each level of an
    :func:`explain` frame (red raised the output, blue lowered it); written
    as a PNG to ``path`` when given."""
    levels = [lv for lv in LEVELS if (explanation["level"] == lv).any()]
    shown = [explanation[explanation["level"] == lv].head(top) for lv in levels]
    figure = new_figure(len(levels), 1, width=7,
                        height=sum(0.6 + 0.3 * len(part) for part in shown))
    for ax, level, part in zip(figure.axes, levels, shown):
        part = part.iloc[::-1]
        ax.barh(range(len(part)), part["effect"],
                color=["tab:red" if e > 0 else "tab:blue" for e in part["effect"]])
        ax.set_yticks(range(len(part)), [_label(r) for r in part.itertuples()])
        ax.axvline(0, color="black", linewidth=0.8)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))
        ax.set_title(f"{level}s", loc="left", fontsize=10)
    attrs = explanation.attrs
    explained = attrs.get("explained", "output")
    figure.axes[-1].set_xlabel(f"effect on the {explained}")
    figure.suptitle(f"{attrs.get('id', '')} at {attrs.get('at', '')}: {explained} "
                    f"{attrs.get('output', math.nan):.3f}", fontsize=11)
    if path is not None:
        save_figure(figure, path)
    return figure


class _Runner:
    """Packs a sampled batch, sets some columns of one node type to their
    typical values, and reads the output explained."""

    def __init__(self, model, read: Callable[[Tensor], float],
                 pack: Callable[[HeteroData], PackedBatch]) -> None:
        self.model, self.read, self.pack = model, read, pack
        self.typical = _Typical(model.spec)

    def __call__(self, batch: HeteroData, node_type: str | None = None,
                 columns: list[str] = ()) -> float:
        packed = self.pack(batch)
        if columns:
            packed = self.typical(packed, node_type, columns)
        return self.read(self.model(packed))


def _readout(predictor, id, at, item, out: Tensor) -> tuple[Callable[[Tensor], float], str]:
    """The number explained, as a function of the model's output, and its name."""
    info = predictor.info
    if info.task_type == types.BINARY:
        return lambda o: float(o[0, 0]), "logit"
    if info.task_type == types.REGRESSION:
        return (lambda o: float(o[0, 0]) * info.target_std + info.target_mean), "prediction"
    if info.task_type == types.MULTICLASS:
        best = int(out[0].argmax())
        return (lambda o: float(o.log_softmax(-1)[0, best]),
                f"log-probability of {info.classes[best]!r}")
    if item is None:
        item = predictor.recommend([id], at, k=1)["item"].iloc[0]
    index = predictor.graph.key_index[info.item_type].get_loc(item)
    return lambda o: float(o[0, index]), f"score of item {item}"


def _without(batch: HeteroData, node_type: str, removed: Tensor) -> HeteroData:
    """``batch`` without the edges into or out of the ``removed`` nodes of
    ``node_type`` (a mask)."""
    out = copy.copy(batch)  # new stores; tensors are replaced, never changed
    for et in batch.edge_types:
        edge_index = batch[et].edge_index
        keep = torch.ones(edge_index.size(1), dtype=torch.bool)
        for side, nt in ((0, et[0]), (1, et[2])):
            if nt == node_type:
                keep &= ~removed[edge_index[side]]
        out[et].edge_index = edge_index[:, keep]
        counts = batch[et].get("num_sampled_edges")
        if counts is not None:  # edges come in hop order: count the kept ones per hop
            hop = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
            out[et].num_sampled_edges = torch.bincount(hop[keep], minlength=len(counts)).tolist()
    return out


class _Typical:
    """Sets columns of a :class:`PackedBatch` to their typical values: the
    training mean, the most common category (index 0: PyTorch Frame orders
    categories by count), the median time, no tags, a zero embedding."""

    def __init__(self, spec) -> None:
        self.names = spec.col_names_dicts
        self.stats = spec.col_stats_dict

    def __call__(self, packed: PackedBatch, node_type: str, columns: list[str]) -> PackedBatch:
        feats = dict(packed.features[node_type])
        stats = self.stats[node_type]
        for st, names in self.names[node_type].items():
            st = getattr(st, "value", st)
            for j, name in enumerate(names):
                if name not in columns:
                    continue
                if st == "multicategorical":
                    keep = feats["multicategorical_bag"] % len(names) != j
                    for key in ("multicategorical", "multicategorical_bag",
                                "multicategorical_weight"):
                        feats[key] = feats[key][keep]
                    continue
                feats[st] = feats[st].clone()
                if st == "numerical":
                    feats[st][:, j] = stats[name][StatType.MEAN]
                elif st == "categorical":
                    feats[st][:, j] = 0
                elif st == "timestamp":
                    feats[st][:, j] = torch.as_tensor(stats[name][StatType.MEDIAN_TIME])
                else:  # embedding columns lie side by side
                    start = sum(stats[n][StatType.EMB_DIM] for n in names[:j])
                    feats[st][:, start:start + stats[name][StatType.EMB_DIM]] = 0.0
        return dataclasses.replace(packed, features={**packed.features, node_type: feats})


def _columns(spec, node_type: str) -> list[str]:
    """The feature columns of ``node_type``, in the model's order."""
    return [c for cols in spec.col_names_dicts.get(node_type, {}).values() for c in cols]


def _days_before(graph: HeteroData, node_type: str, row: int, seed_time: Tensor) -> float:
    if "time" not in graph[node_type]:
        return math.nan
    return float(seed_time - graph[node_type].time[row]) / SECONDS_PER_DAY


def _label(row) -> str:
    if row.level == "table":
        return row.table
    if row.level == "column":
        return f"{row.table}.{row.column}"
    when = "" if math.isnan(row.days_before) else f" ({row.days_before:.0f} d before)"
    return f"{row.table} {row.row}{when}"


def _frame(rows: list[tuple], graph: HeteroData, **attrs) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS, dtype=object)  # row keys keep their type
    frame = frame.astype({"days_before": float, "effect": float})
    frame["table"] = frame["table"].map(graph.table_of)
    frame = (frame.assign(_level=frame["level"].map(LEVELS.index), _size=-frame["effect"].abs())
             .sort_values(["_level", "_size"], kind="stable")
             .drop(columns=["_level", "_size"]).reset_index(drop=True))
    frame.attrs.update(attrs)
    return frame
