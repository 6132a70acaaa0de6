r"""``rdl baseline``: the LightGBM feature baseline on a training config.

Usage::

    rdl baseline --config configs/flights_to_ord.yaml
    rdl baseline --config CFG.yaml --windows 7 30 --hops 1 --max-seeds 5000 \
        --output baseline.json --predictions test_predictions.parquet

Prints the task's metrics on val and test beside a trivial predictor's.
Bad configs and tasks exit with code 2 and one message, no traceback.
"""
from __future__ import annotations

import argparse
import json

from rdl.output_file import OutputFileError, check_output_path, write_atomically
from rdl.user_errors import report

# (flag, option name, type, help); every one overrides the config's baseline: section.
OPTIONS = (
    ("--windows", "windows", float, "past windows in days (all time is always added)"),
    ("--hops", "hops", int, "1: own, parents, children; 2: also two foreign-key hops out"),
    ("--num-boost-round", "num_boost_round", int, "most boosting rounds"),
    ("--learning-rate", "learning_rate", float, "LightGBM learning rate"),
    ("--num-leaves", "num_leaves", int, "leaves per tree"),
    ("--min-data-in-leaf", "min_data_in_leaf", int, "fewest label rows per leaf"),
    ("--feature-fraction", "feature_fraction", float, "share of features per tree"),
    ("--early-stopping-rounds", "early_stopping_rounds", int, "patience on the val split"),
    ("--num-threads", "num_threads", int,
     "threads for DuckDB and LightGBM (0: the share rdl fit takes; RDL_NUM_THREADS decides)"),
    ("--max-seeds", "max_seeds", int, "at most this many label rows per split"),
    ("--seed", "seed", int, "seed for subsampling and LightGBM"),
    ("--exclude-seen", "exclude_seen", str,
     "recommendation: auto, true or false: leave out items the entity already had"),
    ("--source", "source", str, "database to read instead of the config's data.source"),
)


def add_baseline_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds the ``baseline`` sub-command to an ``rdl`` argument parser."""
    parser = subparsers.add_parser(
        "baseline", help="LightGBM on time-aware aggregate features, on the task's own splits",
        description="Computes aggregate features of the task's label rows in DuckDB (no row "
        "after a label's cutoff), trains LightGBM (or ranks own-then-popular items for "
        "recommendation) and prints the task's metrics beside a trivial predictor's.",
    )
    parser.add_argument("--config", required=True,
                        help="YAML config with task: and data: (as for rdl fit), "
                        "optionally baseline:")
    for flag, dest, kind, text in OPTIONS:
        parser.add_argument(flag, dest=dest, type=kind, help=text,
                            nargs="+" if dest == "windows" else None)
    parser.add_argument("--output", metavar="FILE.json", help="write everything measured")
    parser.add_argument("--predictions", metavar="FILE.parquet",
                        help="write the test split's predictions")
    parser.epilog = ("--task.KEY VALUE and --data.KEY VALUE set the config's task: and data: "
                     "settings, as for rdl fit (--task.timedelta '30 days')")
    parser.set_defaults(run=run_baseline_command)
    return parser


def run_baseline_command(args: argparse.Namespace) -> int:
    """Runs the baseline for parsed :obj:`args`; returns the exit code."""
    from rdl.baseline.features import BaselineError
    from rdl.baseline.run import run_baseline
    from rdl.tasks.run_data import config_with_settings

    overrides = {dest: getattr(args, dest) for _, dest, _, _ in OPTIONS}
    if overrides["exclude_seen"] in ("true", "false"):
        overrides["exclude_seen"] = overrides["exclude_seen"] == "true"
    try:  # a path that cannot be written is refused before the baseline runs
        output = args.output and check_output_path(args.output, "--output", "baseline.json")
        predictions = args.predictions and check_output_path(
            args.predictions, "--predictions", "predictions.parquet")
        config = config_with_settings(args.config, getattr(args, "settings", None))
        result = run_baseline(config, **overrides)
    except (BaselineError, ImportError, OutputFileError) as exc:
        return report("baseline", exc)  # rdl.cli.main reports rdl's other errors
    print(f"{result.task_type} task, {result.num_features} features, rows "
          + ", ".join(f"{s} {n}" for s, n in result.rows.items()))
    for note in result.notes:
        print(note)
    print(result.format_table())
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in result.timings.items()))
    if output:
        text = json.dumps(result.as_dict(), indent=2, default=str).encode()
        print(f"wrote {write_atomically(output, lambda file: file.write(text))}")
    if predictions:
        write_atomically(predictions, lambda file: result.predictions.to_parquet(file, index=False))
        print(f"wrote {len(result.predictions)} test predictions to {predictions}")
    return 0
