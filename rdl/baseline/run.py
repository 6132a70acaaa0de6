r"""``run_baseline``: a training config in, the LightGBM baseline's metrics out.

Reads the same YAML config as ``rdl fit`` (``task:`` and ``data:``; the
``model:`` and ``trainer:`` sections are ignored) plus an optional
``baseline:`` section::

    baseline:
      windows: [7, 30, 90, 365]   # past windows in days (all time is added); without
                                  # it: from the data's time step (yearly data: 1, 2, 5 years)
      hops: 2                     # 1: own, parents, children; 2: also two hops out
      num_boost_round: 1000
      learning_rate: 0.05
      num_leaves: 31
      early_stopping_rounds: 50
      num_threads: 0              # 0: rdl's share of the cores (RDL_NUM_THREADS decides)
      exclude_seen: auto          # recommendation: leave out items the entity already had
                                  # (auto: when < 5% of training positives were seen before)
      leakage_guard: warn         # default: data.leakage_guard, as rdl fit reads it

The ``data:`` and ``task:`` sections are read by
:class:`~rdl.tasks.run_data.RunData`, as ``rdl fit`` and ``rdl labels`` read
them: the label rows are the GNN's seeds, ``data.max_seeds`` subset included
(a ``baseline:`` ``max_seeds`` or ``seed`` replaces the data's).
"""
from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rdl.baseline import model
from rdl.baseline.features import BaselineError, check_windows, compute_features
from rdl.baseline.recommend import evaluate_ranking, recommend
from rdl.cpu_share import process_threads
from rdl.tasks import SPLITS, Task, task_types as types
from rdl.tasks.dormant import seed_hints
from rdl.tasks.errors import TaskError
from rdl.tasks.run_data import RunData, config_section, load_config
from rdl.tasks.history import describe_exclude_seen, repeat_rate, resolve_exclude_seen
from rdl.tasks.leakage import GUARD_MODES, guard

DATA_KEYS = ("source", "schema", "sql_schema", "exclude_columns")  # overrides of data:
IMPORTANCE_TOP = 20


@dataclass
class BaselineOptions(model.BoosterSettings):
    r"""Everything a baseline run can be told, beyond the task.

    Args:
        windows: Past windows in days; all time is always added. ``None``
            picks them from the data's time step (:mod:`rdl.baseline.windows`).
        hops: ``1`` or ``2`` foreign-key hops of aggregates.
        max_seeds: Keep at most this many label rows per split (random, as
            the GNN's data module does).
        exclude_seen: Recommendation: never rank an item the entity already
            had (``true``), rank its own past items first (``false``), or
            decide by the training split's repeat rate (``auto``).
        leakage_guard: ``warn``, ``exclude`` or ``off`` (see
            :mod:`rdl.tasks.leakage`); by default the config's
            ``data.leakage_guard``, so that the baseline leaves out what
            ``rdl fit`` leaves out.
        entity_category_min_rows: Categories of the entity table that fewer
            rows hold read as missing; by default the config's
            ``data.entity_category_min_rows``, as for ``rdl fit``.
    """

    windows: tuple[float, ...] | None = None
    hops: int = 2
    max_seeds: int | None = None
    exclude_seen: bool | str = "auto"
    leakage_guard: str = "warn"
    entity_category_min_rows: int = 1


@dataclass
class BaselineResult:
    r"""What a baseline run measured.

    Args:
        task_type: The task's type.
        event_level: Whether each row was predicted at its own time.
        metrics: Split (``val``, ``test``) -> metric name -> value.
        trivial: The same for the trivial predictor (train positive rate,
            train mean, majority class, or global popularity for
            recommendation).
        rows: Label rows per split.
        timings: Seconds per phase.
        feature_seconds: Seconds per feature group (all splits in one query).
        feature_names: The features, in matrix order.
        importances: Total gain per feature, largest first.
        best_iteration: Boosting rounds kept by early stopping.
        options: The settings used.
        predictions: Test split: entity key, timestamp, prediction.
        repeat_rate: Recommendation: share of training positives the entity
            already had.
        notes: What was decided from the data, one line each.
    """

    task_type: str
    event_level: bool
    metrics: dict[str, dict[str, float]]
    trivial: dict[str, dict[str, float]]
    rows: dict[str, int]
    timings: dict[str, float]
    feature_seconds: dict[str, float] = field(default_factory=dict)
    feature_names: list[str] = field(default_factory=list)
    importances: dict[str, float] = field(default_factory=dict)
    best_iteration: int | None = None
    options: dict = field(default_factory=dict)
    predictions: pd.DataFrame | None = field(default=None, repr=False)
    repeat_rate: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def num_features(self) -> int:
        return len(self.feature_names)

    def as_dict(self) -> dict:
        """Plain JSON-ready values (the predictions are left out)."""
        top = list(self.importances.items())[:IMPORTANCE_TOP]
        return {
            "task_type": self.task_type, "entity_level": not self.event_level,
            "metrics": self.metrics, "trivial": self.trivial, "rows": self.rows,
            "num_features": self.num_features, "timings": self.timings,
            "feature_seconds": self.feature_seconds, "best_iteration": self.best_iteration,
            "importance_top20": [{"feature": n, "gain": g} for n, g in top],
            "options": self.options, "repeat_rate": self.repeat_rate, "notes": self.notes,
        }

    def format_table(self) -> str:
        """Split x metric, baseline beside the trivial predictor."""
        lines = [f"{'split':<6} {'metric':<20} {'baseline':>10} {'trivial':>10}"]
        for split, values in self.metrics.items():
            for name, value in values.items():
                lines.append(f"{split:<6} {name:<20} {value:>10.4f} "
                             f"{self.trivial[split][name]:>10.4f}")
        return "\n".join(lines)


def run_baseline(config: dict | str | Path, **overrides) -> BaselineResult:
    r"""Runs the baseline on a training config.

    Args:
        config (dict or str or Path): The config, or a YAML file holding it.
        **overrides: Any :class:`BaselineOptions` field, or a ``data:`` key
            (``source``, ``schema``, ``sql_schema``, ``exclude_columns``,
            ``max_seeds``, ``seed``); ``None`` values are ignored.

    Raises:
        BaselineError: A config without ``task:`` or ``data.source``, or an
            unknown or invalid option.
        rdl.tasks.TaskError: A task that cannot produce labels.
    """
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    run, options = read_config(config, overrides)
    options, threads_note = _with_threads(options)
    task = run.task
    db = run.connect()
    task.check(db)
    timings["connect"] = time.perf_counter() - clock
    clock = time.perf_counter()
    tables = {s: run.labels(db, s).reset_index(drop=True) for s in SPLITS}
    timings["labels"] = time.perf_counter() - clock
    if task.task_type == types.RECOMMENDATION:
        result = _run_recommendation(db, task, tables, options, timings)
    else:
        exclude = guard(db, task, options.leakage_guard, run.exclude_columns)
        result = _run_lightgbm(db, task, tables, options, exclude, timings)
    hints = seed_hints(task, db, tables["train"])
    chosen = [task.split_choice] if task.split_choice is not None else []
    result.notes[:0] = chosen + hints
    result.notes += [threads_note] if threads_note else []
    return result


def _with_threads(options: BaselineOptions) -> tuple[BaselineOptions, str | None]:
    """The options with ``num_threads`` 0 resolved to this process's share of
    the cores, as ``rdl fit`` takes it (all of them would make LightGBM and
    DuckDB wait on another busy process's threads), and a note saying so."""
    if options.num_threads:
        return options, None
    try:
        threads, why = process_threads()
    except ValueError as exc:  # a bad RDL_NUM_THREADS
        raise BaselineError(str(exc)) from None
    note = f"using {threads} CPU thread{'s' if threads != 1 else ''} ({why})"
    return dataclasses.replace(options, num_threads=threads), note


def read_config(config: dict | str | Path, overrides: dict | None = None,
                ) -> tuple[RunData, BaselineOptions]:
    """The :class:`RunData` (data source, task, seed subset) and the
    :class:`BaselineOptions` of a config, ``overrides`` applied."""
    try:
        if not isinstance(config, dict):
            config = load_config(config)
        run = RunData.from_config(config)
        settings = dict(config_section(config, "baseline", "the config", required=False))
    except TaskError as exc:
        raise BaselineError(str(exc).removeprefix("the config: ")) from None
    settings.setdefault("max_seeds", run.max_seeds)
    settings.setdefault("seed", run.seed)
    data_section = config_section(config, "data", "the config")
    settings.setdefault("leakage_guard", data_section.get("leakage_guard", "warn"))
    settings.setdefault("entity_category_min_rows",
                        data_section.get("entity_category_min_rows", 1))
    data = {}
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key in DATA_KEYS:
            data[key] = value
        else:
            settings[key] = value
    options = _options(settings)
    run = dataclasses.replace(run, **data, max_seeds=options.max_seeds, seed=options.seed)
    return run, options


def _options(settings: dict) -> BaselineOptions:
    names = [f.name for f in dataclasses.fields(BaselineOptions)]
    unknown = sorted(set(settings) - set(names))
    if unknown:
        raise BaselineError(f"unknown baseline option(s) {unknown}; valid ones are {names}")
    options = BaselineOptions(**settings)
    if options.windows is not None:
        options.windows = check_windows(options.windows)
    for name in ("num_boost_round", "num_leaves", "min_data_in_leaf", "early_stopping_rounds"):
        _check_int(name, getattr(options, name), minimum=1)
    _check_int("num_threads", options.num_threads, minimum=0)
    _check_int("seed", options.seed, minimum=0)
    _check_int("entity_category_min_rows", options.entity_category_min_rows, minimum=1)
    if options.hops not in (1, 2) or isinstance(options.hops, bool):
        raise BaselineError(f"baseline option hops={options.hops!r} must be 1 or 2")
    try:
        resolve_exclude_seen(options.exclude_seen, 0.0)
    except TaskError as exc:
        raise BaselineError(f"baseline option {exc}") from None
    if options.max_seeds is not None:
        _check_int("max_seeds", options.max_seeds, minimum=1)
    if options.leakage_guard not in GUARD_MODES:
        raise BaselineError(f"leakage_guard={options.leakage_guard!r} is not one of "
                            f"{list(GUARD_MODES)}")
    for name in ("learning_rate", "feature_fraction"):
        value = getattr(options, name)
        if not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise BaselineError(f"baseline option {name}={value!r} must be a number in (0, 1]")
    return options


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise BaselineError(f"baseline option {name}={value!r} must be a whole number "
                            f">= {minimum}")


def _run_lightgbm(db, task: Task, tables: dict[str, pd.DataFrame], options: BaselineOptions,
                  exclude_columns, timings: dict[str, float]) -> BaselineResult:
    clock = time.perf_counter()
    everything = pd.concat(list(tables.values()), ignore_index=True)
    feats = compute_features(db, task, everything, windows=options.windows, hops=options.hops,
                             exclude_columns=exclude_columns,
                             category_min_rows=options.entity_category_min_rows,
                             threads=options.num_threads)
    timings["features"] = time.perf_counter() - clock
    options = dataclasses.replace(options, windows=feats.windows)
    bounds = np.cumsum([0, *(len(t) for t in tables.values())])
    x = {s: feats.frame.iloc[bounds[i]:bounds[i + 1]].reset_index(drop=True)
         for i, s in enumerate(tables)}
    classes = task.classes(db) if task.task_type == types.MULTICLASS else None
    y = {s: _targets(t["label"], task.task_type, classes) for s, t in tables.items()}
    num_classes = len(classes) if classes is not None else None
    clock = time.perf_counter()
    booster = model.fit(x["train"], y["train"], x["val"], y["val"], task.task_type,
                        _booster_settings(options), num_classes)
    timings["fit"] = time.perf_counter() - clock
    clock = time.perf_counter()
    metrics, trivial, test_preds = {}, {}, None
    floor = task.value_floor(db)  # as rdl fit raises its values
    for split in ("val", "test"):
        preds = model.predict(booster, x[split])
        if floor is not None:
            preds = np.maximum(preds, floor)
        metrics[split] = model.evaluate(preds, y[split], task.task_type, task.metrics,
                                        num_classes)
        base = model.trivial(y["train"], len(y[split]), task.task_type, num_classes)
        trivial[split] = model.evaluate(base, y[split], task.task_type, task.metrics,
                                        num_classes)
        test_preds = preds
    timings["predict_and_metrics"] = time.perf_counter() - clock
    if task.task_type == types.MULTICLASS:
        test_preds = [classes[i] for i in np.asarray(test_preds).argmax(1)]
    return BaselineResult(
        task.task_type, task.event_level, metrics, trivial,
        {s: len(t) for s, t in tables.items()}, timings, feats.seconds, feats.names,
        model.importances(booster), booster.best_iteration, _plain(options),
        _prediction_frame(tables["test"], test_preds), notes=feats.notes,
    )


def _run_recommendation(db, task: Task, tables: dict[str, pd.DataFrame],
                        options: BaselineOptions, timings: dict[str, float]) -> BaselineResult:
    clock = time.perf_counter()
    item = db[task.item_table]
    item_keys = pd.Index(item.df[item.primary_key])
    rate = repeat_rate(task, db, tables["train"]).rate
    exclude = resolve_exclude_seen(options.exclude_seen, rate)
    notes = [describe_exclude_seen(options.exclude_seen, rate, exclude)]
    metrics, trivial, test_items = {}, {}, None
    for split in ("val", "test"):
        labels = tables[split]
        ranked = recommend(db, task, labels, exclude_seen=exclude, threads=options.num_threads)
        if exclude:
            _warn_if_all_excluded(repeat_rate(task, db, labels), split)
        popular = recommend(db, task, labels, popularity_only=True, threads=options.num_threads)
        metrics[split] = evaluate_ranking(ranked, labels["label"], item_keys, task.metrics,
                                          task.top_k)
        trivial[split] = evaluate_ranking(popular, labels["label"], item_keys, task.metrics,
                                          task.top_k)
        test_items = ranked
    timings["recommend_and_metrics"] = time.perf_counter() - clock
    return BaselineResult(task.task_type, task.event_level, metrics, trivial,
                          {s: len(t) for s, t in tables.items()}, timings,
                          options=_plain(options),
                          predictions=_prediction_frame(tables["test"], test_items),
                          repeat_rate=rate, notes=notes)


def _warn_if_all_excluded(repeats, split: str) -> None:
    if repeats.positives and repeats.repeats == repeats.positives:
        warnings.warn(f"Every correct item of the {split} split was already seen by its entity, "
                      "and exclude_seen left them all out: the metrics are 0 by construction. "
                      "Set baseline exclude_seen: false", stacklevel=4)


def _targets(label: pd.Series, task_type: str, classes: list | None) -> np.ndarray:
    if task_type == types.MULTICLASS:
        lookup = {c: i for i, c in enumerate(classes)}
        return label.map(lookup).to_numpy(dtype=np.int64)
    return label.to_numpy(dtype=np.float64)


def _booster_settings(options: BaselineOptions) -> model.BoosterSettings:
    names = [f.name for f in dataclasses.fields(model.BoosterSettings)]
    return model.BoosterSettings(**{n: getattr(options, n) for n in names})


def _prediction_frame(labels: pd.DataFrame, predictions) -> pd.DataFrame:
    """Entity key, timestamp and prediction (a value, a class or a list of items)."""
    out = labels.iloc[:, :2].copy()
    out["prediction"] = pd.Series(list(predictions), index=out.index, dtype=object) \
        if isinstance(predictions, list) else predictions
    return out


def _plain(options: BaselineOptions) -> dict:
    plain = dataclasses.asdict(options)
    if plain["windows"] is not None:
        plain["windows"] = list(plain["windows"])
    return plain

