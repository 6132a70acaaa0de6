"""Data problems found while reading a database: counted, never silent."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class DataIssue:
    r"""One problem in the data, with how many rows it touches.

    Args:
        kind: Machine-readable category, e.g. ``"dangling_foreign_key"``.
        table: Table the problem was found in.
        column: Column concerned, or ``None`` for table-level problems.
        count: Number of rows (or values) affected.
        action: What rdl did about it, e.g. ``"set to NULL"`` or ``"dropped"``.
        message: One human-readable sentence.
    """

    kind: str
    table: str
    column: str | None
    count: int
    action: str
    message: str

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        where = self.table if self.column is None else f"{self.table}.{self.column}"
        return f"{where}: {self.message} ({self.action})"


class SchemaError(ValueError):
    """The schema (reflected or declared) cannot be used as it stands."""


class SourceError(ValueError):
    """The data source cannot be opened or read."""


def relative_path_note(path: str | Path) -> str:
    """For an error about a missing relative path: where it was looked for,
    since a config's paths are read from the folder rdl runs in, not the
    config's own folder. Empty for an absolute path."""
    if Path(path).is_absolute():
        return ""
    return (f" (a relative path, read from the folder rdl runs in, {Path.cwd()}, not from a "
            "config file's folder)")


def view_issues(names: list[str]) -> list[DataIssue]:
    """One report per view of a database, which rdl does not read: a view's
    rows are those of the tables it selects from, and it declares no keys."""
    return [DataIssue("view", name, None, 0, "not read",
                      "a view, not a table: its rows come from the tables it selects from; "
                      "create a table from it to give a model its rows")
            for name in sorted(names)]
