"""One table of a relational database: its rows and what rdl knows about them."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import pandas as pd

# Semantic types rdl assigns to feature columns. The names are PyTorch Frame's
# ``torch_frame.stype`` values, kept as plain strings so that ``rdl.db`` never
# imports torch (``rdl inspect`` must start fast).
STYPES = (
    "numerical",
    "categorical",
    "multicategorical",
    "timestamp",
    "text_embedded",
    "embedding",
)


@dataclass
class Table:
    r"""A table with its keys, time column and column semantics.

    Args:
        name: Table name as the database spells it.
        df: The rows. Key columns hold the user's own key values; the time
            column, when present, is ``datetime64[ns]``.
        primary_key: Column whose values identify a row, or ``None``.
            Composite keys and tables without a key get a surrogate column.
        foreign_keys: Maps a column of this table to the table it references
            (always that table's primary key).
        time_column: Column holding the row's creation/event time, or ``None``
            for static tables whose rows are visible at every time.
        stypes: Maps each feature column to its stype name (see ``STYPES``).
            Key columns are not features and never appear here.
    """

    name: str
    df: pd.DataFrame
    primary_key: str | None = None
    foreign_keys: dict[str, str] = field(default_factory=dict)
    time_column: str | None = None
    stypes: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.df)

    def __repr__(self) -> str:
        return (
            f"Table(name={self.name!r}, rows={len(self.df)}, "
            f"primary_key={self.primary_key!r}, "
            f"foreign_keys={self.foreign_keys!r}, "
            f"time_column={self.time_column!r}, "
            f"columns={len(self.stypes)})"
        )

    @property
    def min_time(self) -> pd.Timestamp | None:
        """Earliest row time, or ``None`` for static or empty tables."""
        if self.time_column is None or self.df.empty:
            return None
        return self.df[self.time_column].min()

    @property
    def max_time(self) -> pd.Timestamp | None:
        """Latest row time, or ``None`` for static or empty tables."""
        if self.time_column is None or self.df.empty:
            return None
        return self.df[self.time_column].max()

    def upto(self, timestamp: pd.Timestamp) -> Table:
        """Returns a copy holding only rows whose time is ``<= timestamp``.

        Static tables are returned unchanged: their rows exist at all times.
        """
        if self.time_column is None:
            return self
        keep = self.df[self.time_column] <= pd.Timestamp(timestamp)
        return replace(self, df=self.df.loc[keep].reset_index(drop=True))

    def metadata(self) -> dict:
        """Everything but the rows, as plain JSON-serialisable values."""
        return {
            "name": self.name,
            "primary_key": self.primary_key,
            "foreign_keys": dict(self.foreign_keys),
            "time_column": self.time_column,
            "stypes": dict(self.stypes),
        }
