"""The in-memory relational database every later stage of rdl reads from."""
from __future__ import annotations

import errno
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from rdl.db.files import inside, table_file_name
from rdl.db.issues import DataIssue, SchemaError, SourceError
from rdl.db.table import Table
from rdl.output_file import OutputFileError, write_folder_atomically

METADATA_FILE = "rdl_metadata.json"
FORMAT_VERSION = 1


@dataclass
class Database:
    r"""Tables keyed by name, plus the data problems found while reading them.

    Every foreign key points at the primary key of another table in
    ``tables``; dangling references have already been set to NULL and counted
    in ``issues``.

    Args:
        tables: The tables, by name.
        issues: Data problems found while reading, each counted.
        source: Where the data came from (a URL without password, or a path).
    """

    tables: dict[str, Table]
    issues: list[DataIssue] = field(default_factory=list)
    source: str = ""

    def __getitem__(self, name: str) -> Table:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(
                f"No table {name!r}; the database has {sorted(self.tables)}"
            ) from None

    def __contains__(self, name: str) -> bool:
        return name in self.tables

    def __iter__(self) -> Iterator[Table]:
        return iter(self.tables.values())

    def __repr__(self) -> str:
        rows = ", ".join(f"{t.name}={len(t)}" for t in self)
        return f"Database({rows}; issues={len(self.issues)})"

    @property
    def min_time(self) -> pd.Timestamp | None:
        """Earliest row time over all timed tables."""
        times = [t.min_time for t in self if t.min_time is not None]
        return min(times) if times else None

    @property
    def max_time(self) -> pd.Timestamp | None:
        """Latest row time over all timed tables."""
        times = [t.max_time for t in self if t.max_time is not None]
        return max(times) if times else None

    @property
    def unlinked(self) -> list[str]:
        """Tables that no foreign key links to another one, where some tables
        are linked: their rows are seen only as a task's own seeds, never as a
        sampled neighbour. Empty when nothing is linked at all."""
        linked = {name for table in self if table.foreign_keys
                  for name in (table.name, *table.foreign_keys.values())}
        return [table.name for table in self if linked and table.name not in linked]

    def upto(self, timestamp: pd.Timestamp | str) -> Database:
        """Returns a database holding only rows with time ``<= timestamp``.

        Use it to build features without leaking the future. Foreign keys of
        kept rows can still point at parent rows that are cut away only when
        the parent's own time is later than the child's, which a consistent
        database never has.
        """
        ts = pd.Timestamp(timestamp)
        return Database(
            tables={name: t.upto(ts) for name, t in self.tables.items()},
            issues=list(self.issues),
            source=self.source,
        )

    def summary(self) -> dict:
        """The shape ``rdl inspect --json`` prints."""
        return {
            "tables": {
                t.name: {
                    "rows": len(t),
                    "primary_key": t.primary_key,
                    "time_column": t.time_column,
                    "foreign_keys": dict(t.foreign_keys),
                    "columns": dict(t.stypes),
                }
                for t in self
            },
            "issues": [issue.to_dict() for issue in self.issues],
        }

    def save(self, path: str | Path) -> None:
        """Writes one parquet file per table plus ``rdl_metadata.json``, which
        maps each table name to its file (see :func:`rdl.db.files.table_file_name`).

        The folder is written whole or not at all: a save stopped half-way
        leaves ``path`` as it was. ``path`` must be new, empty, or a database
        saved before (which the new one replaces); any other folder is
        refused, so a folder of source files is never written over.
        """
        path = Path(path)
        _check_replaceable(path)
        files = {t.name: table_file_name(t.name, ".parquet") for t in self}
        meta = {
            "format_version": FORMAT_VERSION,
            "source": self.source,
            "files": files,
            "tables": [t.metadata() for t in self],
            "issues": [i.to_dict() for i in self.issues],
        }

        def write(folder: Path) -> None:
            for table in self:
                table.df.to_parquet(inside(folder, files[table.name]), index=False)
            (folder / METADATA_FILE).write_text(json.dumps(meta, indent=2))

        write_folder_atomically(path, write)

    @classmethod
    def load(
        cls, path: str | Path, *, columns: dict[str, list[str]] | None = None,
        exclude_columns: dict[str, list[str]] | None = None,
        upto: pd.Timestamp | str | None = None,
    ) -> Database:
        """Reads a folder written by :meth:`save`, exactly as it was saved.

        ``columns``/``exclude_columns`` (table -> feature columns) prune the
        features read and ``upto`` keeps rows with time ``<= upto``, as in
        :func:`rdl.connect`; the saved time columns are timestamps, so the
        filter runs inside the parquet reader and the result equals
        ``Database.load(path).upto(upto)`` (less the pruned columns).
        """
        path = Path(path)
        meta_file = path / METADATA_FILE
        if not meta_file.is_file():
            raise SourceError(
                f"{path} is not a saved rdl database: {METADATA_FILE} is missing. "
                "Use rdl.connect() to read a plain folder of parquet/CSV files."
            )
        meta = json.loads(meta_file.read_text())
        if meta.get("format_version") != FORMAT_VERSION:
            raise SourceError(
                f"{meta_file} has format version {meta.get('format_version')!r}; "
                f"this rdl reads version {FORMAT_VERSION}. Save it again."
            )
        pruned = dropped_features(
            {tm["name"]: tm["stypes"] for tm in meta["tables"]},
            {tm["name"]: tm["time_column"] for tm in meta["tables"]}, columns, exclude_columns)
        tables = {}
        for tm in meta["tables"]:
            name, time, dropped = tm["name"], tm["time_column"], pruned[tm["name"]]
            # Folders saved before "files" existed named each file after its table.
            file = inside(path, meta.get("files", {}).get(name, f"{name}.parquet"))
            filters = None
            if upto is not None and time is not None:
                filters = [(time, "<=", pd.Timestamp(upto))]
            df = pd.read_parquet(file, filters=filters, columns=[
                c for c in pq.read_schema(file).names if c not in dropped])
            stypes = {c: s for c, s in tm["stypes"].items() if c not in dropped}
            tables[name] = Table(df=df, **{**tm, "stypes": stypes})
        issues = [DataIssue(**i) for i in meta["issues"]]
        return cls(tables=tables, issues=issues, source=meta.get("source", ""))


def dropped_features(
    stypes: dict[str, dict[str, str]], times: dict[str, str | None],
    columns: dict[str, list[str]] | None, exclude_columns: dict[str, list[str]] | None,
) -> dict[str, list[str]]:
    """Per table, the feature columns that ``columns`` (features to keep) and
    ``exclude_columns`` leave out; the time column is always kept. Raises
    :class:`SchemaError` for names that are not tables or feature columns."""
    for option, mapping in (("columns", columns), ("exclude_columns", exclude_columns)):
        for table, cols in (mapping or {}).items():
            if table not in stypes:
                raise SchemaError(f"{option} names table {table!r}; tables are {sorted(stypes)}.")
            unknown = [c for c in cols if c not in stypes[table]]
            if unknown:
                raise SchemaError(
                    f"{option} names column(s) {unknown} of table {table!r}, which are not "
                    f"feature columns; its features are {list(stypes[table])}."
                )
            if option == "exclude_columns" and times[table] in cols:
                raise SchemaError(
                    f"exclude_columns names {table}.{times[table]}, which is the time column "
                    "and always read."
                )
    keep, drop = columns or {}, exclude_columns or {}
    return {
        name: [c for c in features if c != times[name] and (
            c not in keep.get(name, features) or c in drop.get(name, ()))]
        for name, features in stypes.items()
    }


def _check_replaceable(path: Path) -> None:
    """Refuses a ``path`` that is a file, or a folder holding files but no
    saved database."""
    if path.exists() and not path.is_dir():
        raise OutputFileError(errno.EEXIST, f"Database.save: {path} is a file; name a folder "
                                            "to save the database in")
    if not path.is_dir() or (path / METADATA_FILE).is_file():
        return
    held = sorted(p.name for p in path.iterdir())
    if held:
        shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        raise OutputFileError(errno.EEXIST, f"Database.save: {path} holds {shown} but no saved "
                                            f"database ({METADATA_FILE}); save into a new or "
                                            "empty folder, e.g. " + str(path / "snapshot"))
