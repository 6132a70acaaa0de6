"""Human-readable views of a :class:`Database`: a text report and a schema plot."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from rdl.db.database import Database
from rdl.db.table import Table
from rdl.db.schema_guess import SchemaGuess, guess_keys, guess_time_columns

# A table that this many foreign keys point to gets the shared fan-out hint
# (rdl.sampling.fanout.AUTO_SHARE_LINKS, which the db stage cannot import).
WIDE_LINKS = 5
# From this share of child rows older than the parent row they name, a hint says so.
LATE_SHARE = 0.01


Suggestion = tuple[SchemaGuess, list[str]]  # what suggested_schema returns


def format_report(db: Database, suggestion: Suggestion | None = None) -> str:
    """Tables with rows, keys, time column and stypes, then the data issues
    and hints (``suggestion``: :func:`suggested_schema`'s, if already made)."""
    lines = [f"source: {db.source}" if db.source else "source: (in memory)"]
    span = (db.min_time, db.max_time)
    if span[0] is not None:
        lines.append(f"time span: {span[0]} .. {span[1]}")
    for table in db:
        lines.append("")
        lines.append(f"{table.name}  ({len(table):,} rows)")
        lines.append(f"  primary key : {table.primary_key or '-'}")
        lines.append(f"  time column : {table.time_column or '- (static)'}")
        for column, parent in table.foreign_keys.items():
            lines.append(f"  foreign key : {column} -> {parent}")
        width = max((len(c) for c in table.stypes), default=0)
        for column, stype in table.stypes.items():
            lines.append(f"    {column:<{width}}  {stype}")
        if not table.stypes:
            lines.append("    (no feature columns)")
    lines.append("")
    if db.issues:
        lines.append(f"issues ({len(db.issues)}):")
        # a count of rows or values; a table-level note (a view, a file's encoding) has none
        lines.extend(f"  - {issue}" + (f" [{issue.count:,}]" if issue.count else "")
                     for issue in db.issues)
    else:
        lines.append("issues: none")
    hints = inspect_hints(db, suggestion)
    if hints:
        lines.append("")
        lines.append("hints:")
        for hint in hints:  # a hint's later lines (a YAML block) indented under its first
            first, *rest = hint.split("\n")
            lines.append(f"  - {first}")
            lines.extend(f"    {line}" for line in rest)
    return "\n".join(lines)


def inspect_hints(db: Database, suggestion: Suggestion | None = None) -> list[str]:
    """Everything ``rdl inspect`` suggests: schema entries to declare, times,
    then sampling."""
    return (schema_hints(db, suggestion) + time_hints(db) + late_parent_hints(db)
            + sampling_hints(db))


_ALONE = "no foreign keys link these tables, so a model would see each row alone"


def suggested_schema(db: Database) -> Suggestion:
    """What names and values suggest the schema leaves out, and why (a line
    for each kind): keys where no foreign key links the tables, or else only
    the foreign keys left out (with the guessed primary keys they point to);
    time columns for tables without one (only those that link to another
    where some table has one; :mod:`rdl.db.schema_guess`). The guess is empty
    where there is nothing to suggest."""
    notes = []
    guess = guess_keys(db)
    weak = (" (commented out where only part of them are, or where the name is unlike the "
            "key's)" if guess.weak_links else "")
    if any(table.foreign_keys for table in db):
        guess = guess.links_only()
        if guess.foreign_keys or guess.weak_links:
            notes.append("these columns look like foreign keys the database does not declare "
                         f"(nearly all values found in the parent's key{weak})")
    elif guess.foreign_keys or guess.weak_links:
        notes.append(f"{_ALONE}. These columns look like keys (unique; or nearly all values "
                     f"found in the parent's key{weak})")
    elif not guess.implied_tables:
        guess = SchemaGuess()
    if guess.implied_tables:
        notes.append("these id columns repeat but name no table: an implied table gives each "
                     "value a row (first seen at its earliest row), for a task to predict for "
                     "and for their rows to link through")
    linking = {table.name for table in db if table.foreign_keys} | set(guess.foreign_keys)
    guess.time_columns = guess_time_columns(db, linking)
    guess.time_gaps = {name: gaps for name, (column, _) in guess.time_columns.items()
                       if (gaps := int(db[name].df[column].isna().sum()))}
    guess.time_parents = _time_parents(db, guess)
    if guess.time_columns:
        static = ("no table has a time column, so every row is seen" if not any(
            table.time_column for table in db) else "tables that link to others have no time "
            "column, so each of their rows is seen")
        notes.append(f"{static} at every prediction time; these whole numbers look like times: "
                     "years, months or days (at: end: a row is seen once its period is over, as "
                     "a season's statistics should be), dates written as digits (format), or "
                     "seconds (ms, us, ns) since 1970")
    return guess, notes


def _linked_to(db: Database, guess: SchemaGuess | None = None) -> set[str]:
    """Tables that a declared (or guessed) foreign key names: entities, which
    exist before the rows that name them, not at their own parent's time
    (Chinook's customers were not created when their support rep was hired),
    so no ``{from: ...}`` is offered for them; lines of an order are named by
    nothing."""
    parents = {parent for table in db for parent in table.foreign_keys.values()}
    if guess is not None:
        parents |= {parent for links in guess.foreign_keys.values()
                    for parent, _, _ in links.values()}
    return parents


def _time_parents(db: Database, guess: SchemaGuess) -> dict[str, tuple[str, str]]:
    """Tables without a time (declared or guessed), named by no foreign key,
    whose one-column foreign key (declared or guessed) names a table with
    one: each table's first such key by name (what :func:`time_hints` says
    in words, offered in the suggested file too)."""
    timed = {table.name for table in db if table.time_column} | set(guess.time_columns)
    entities = _linked_to(db, guess)
    links = {table.name: dict(table.foreign_keys) for table in db}
    for table, guessed in guess.foreign_keys.items():
        links[table].update({column: parent for column, (parent, _, _) in guessed.items()
                             if isinstance(column, str)})
    found = {}
    for table, named in links.items():
        if table in timed or table in entities:
            continue
        # a key of several columns is stored as "a+b"; {from: ...} takes one column
        dated = sorted((column, parent) for column, parent in named.items()
                       if parent in timed and "+" not in column)
        if dated:
            found[table] = dated[0]
    return found


def schema_hints(db: Database, suggestion: Suggestion | None = None) -> list[str]:
    """The :func:`suggested_schema` (made here unless given) as one schema
    file to check and pass with ``--schema`` (or ``data.schema``), or where
    nothing links the tables and no key is guessed, a line saying so."""
    hints = []
    tables = list(db)
    guess, notes = suggestion or suggested_schema(db)
    if len(tables) >= 2 and not (guess.foreign_keys or guess.weak_links or
                                 any(t.foreign_keys for t in tables)):
        hints.append(f"{_ALONE}; declare the keys in a schema file (--schema FILE.yaml, or "
                     "data.schema in a config; README: The schema file)")
    guessed = {name for table, links in (*guess.foreign_keys.items(), *guess.weak_links.items())
               for name in (table, *(parent for parent, _, _ in links.values()))}
    alone = [name for name in db.unlinked if name not in guessed]
    if alone:
        hints.append(f"no foreign key links {', '.join(alone)} to another table, so a "
                     "model sees those rows only as a task's own seeds, never beside other "
                     "rows: declare their keys in a schema file, or leave them out with "
                     "drop_tables")
    if notes:
        hints.append("; ".join(notes) + ". Check them, save them as a YAML file (rdl inspect "
                     "--suggest-schema FILE.yaml writes it) and pass it with --schema FILE.yaml "
                     "(data.schema in a config); it adds to what the database declares\n"
                     + guess.to_yaml())
    return hints


def time_hints(db: Database) -> list[str]:
    """A line for each table without a time column that links to a table
    with one: its rows are seen at every prediction time, those that belong
    to later parent rows too (an invoice's lines before the invoice);
    ``time_column: {from: <key>}`` places each row at its parent's time.
    A table others link to gets none (:func:`_linked_to`)."""
    hints = []
    entities = _linked_to(db)
    for table in db:
        if table.time_column is not None or table.name in entities:
            continue
        for column, parent in sorted(table.foreign_keys.items()):
            # A key of several columns is stored as "a+b" (foreign_key_column), and
            # {from: ...} takes a one-column key only.
            if db[parent].time_column is not None and "+" not in column:
                hints.append(
                    f"{table.name} has no time column but links to {parent}, which has one: "
                    f"every {table.name} row is seen at every prediction time, also those of "
                    f"later {parent} rows; if each row happens with the {parent} row it names, "
                    f"declare {table.name}: time_column: {{from: {column}}} in a schema file")
    return hints


def late_parent_hints(db: Database, parents: set[str] | None = None) -> list[str]:
    """A line for each timed parent whose rows are dated after the timed child
    rows that name them: every parent row after most of its children
    (Sakila's customers are all created on 2006-02-14, after every rental),
    or at least :data:`LATE_SHARE` of the children more than a day older than
    the very row they name, through the child table's only link to the parent
    (dellstore2: 7.7% of orders before their customer's ``created_at``). A row
    exists from its time on, so no sampled subgraph shows those children
    beside their parent, and no entity task finds the parent before that
    time, whatever its children say. Such a time
    column usually records when rows were loaded or last changed. ``parents``
    limits the lines to those tables (a task's entity table)."""
    every: dict[str, list[str]] = {}
    own: dict[str, list[tuple[str, str]]] = {}
    for table in db:
        if table.time_column is None:
            continue
        child_times = table.df[table.time_column]
        for column, parent in sorted(table.foreign_keys.items()):
            parent_table = db[parent]
            if parent_table.time_column is None or (parents is not None
                                                    and parent not in parents):
                continue
            named = table.df[column].notna() & child_times.notna()
            linked = child_times[named]
            early = int((linked < parent_table.min_time).sum())
            if early and early * 2 >= len(linked):
                every.setdefault(parent, []).append(
                    f"{early:,} of {len(linked):,} {table.name} rows by {column}")
            elif "+" not in column and list(table.foreign_keys.values()).count(parent) == 1:
                # one link: the rows are the parent's own (its orders), where two links
                # relate parent rows (a referral names its referee before the signup);
                # a key of several columns is stored as "a+b"
                older = _older_than_their_parent(table, column, parent_table, named)
                if older and older >= LATE_SHARE * len(linked):
                    own.setdefault(parent, []).append(
                        (f"{older:,} of {len(linked):,} {table.name} rows by {column}",
                         table.name))
    hints = []
    for parent, counts in sorted(every.items()):
        table = db[parent]
        hints.append(
            f"{', '.join(counts)} that name a {parent} row are older than every {parent} "
            f"row ({parent}.{table.time_column} runs {table.min_time} .. {table.max_time}): a "
            f"row exists from its time on, so a model never sees them beside it, and a task on "
            f"{parent} finds no {parent} row before its time. If {table.time_column} records "
            f"when rows were loaded, declare {parent}: time_column: null in a schema file")
    for parent, counts in sorted(own.items()):
        table = db[parent]
        children = " and ".join(sorted({child for _, child in counts}))
        hints.append(
            f"{', '.join(count for count, _ in counts)} are more than a day older than the "
            f"{parent} row they name ({parent}.{table.time_column}): a row exists from its "
            f"time on, so until then a model never sees them beside it and a task on {parent} "
            f"leaves that row out, whatever its {children} rows say. If {table.time_column} "
            f"records when rows were loaded or last changed, declare {parent}: time_column: "
            f"null in a schema file")
    return hints


def _older_than_their_parent(table: Table, column: str, parent: Table, named: pd.Series) -> int:
    """How many of ``table``'s rows (``named``: those with a key and a time)
    are more than a day older than the ``parent`` row their ``column`` names."""
    parent_times = pd.Series(parent.df[parent.time_column].to_numpy(),
                             index=parent.df[parent.primary_key].to_numpy())
    if not parent_times.index.is_unique:
        return 0
    rows = table.df.loc[named]
    own = rows[column].map(parent_times)
    return int((rows[table.time_column] < own - pd.Timedelta(days=1)).sum())


def sampling_hints(db: Database) -> list[str]:
    """A line for each table that at least :data:`WIDE_LINKS` foreign keys
    point to: sampled per link type, its rows would pull in that many times
    the neighbours of a one-link table, so by default (``shared_fanout:
    auto``, the same threshold) its links share one budget per row."""
    links: dict[str, int] = {}
    for table in db:
        for parent in table.foreign_keys.values():
            links[parent] = links.get(parent, 0) + 1
    return [f"{parent}: {count} foreign keys point to it, so its links share each hop's "
            f"num_neighbors as one budget per row (data.shared_fanout: auto, the default; "
            f"+2.1 test AUROC on an 8-link shop, benchmarks/REPORT.md); "
            f"data.shared_fanout: false samples num_neighbors per link, up to {count}x the "
            f"rows of a one-link table"
            for parent, count in sorted(links.items()) if count >= WIDE_LINKS]


def schema_links(db: Database) -> dict[tuple[str, str], list[str]]:
    """(child table, parent table) -> the child's foreign-key columns to it:
    one arrow each in the schema plot, however many columns link the pair."""
    links: dict[tuple[str, str], list[str]] = {}
    for table in db:
        for column, parent in table.foreign_keys.items():
            links.setdefault((table.name, parent), []).append(column)
    return links


def plot_schema(db: Database, path: str | Path) -> None:
    """Draws tables as boxes on a circle and foreign keys as arrows child -> parent."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(db.tables)
    n = len(names)
    pos = {
        name: ((math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n))
               if n > 1 else (0.0, 0.0))
        for i, name in enumerate(names)
    }
    fig, ax = plt.subplots(figsize=(8, 8))
    for (child, parent), columns in schema_links(db).items():
        label = ", ".join(columns)
        (x0, y0), (x1, y1) = pos[child], pos[parent]
        if child == parent:
            ax.annotate("", xy=(x0 + 0.05, y0 + 0.12), xytext=(x0 - 0.05, y0 + 0.12),
                        arrowprops=dict(arrowstyle="->", connectionstyle="arc3,rad=-2.5"))
            ax.text(x0, y0 + 0.3, label, ha="center", fontsize=8, color="gray")
            continue
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="->", shrinkA=28, shrinkB=28,
                                    connectionstyle="arc3,rad=0.1"))
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, label, ha="center", fontsize=8, color="gray",
                bbox=dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none"))
    for table in db:
        x, y = pos[table.name]
        label = f"{table.name}\n{len(table):,} rows"
        if table.time_column:
            label += f"\ntime: {table.time_column}"
        ax.text(x, y, label, ha="center", va="center", fontsize=10,
                bbox=dict(boxstyle="round",
                          facecolor="#e8f0fe" if table.time_column else "#f1f3f4"))
    ax.set_xlim(-1.5, 1.5)
    ax.set_ylim(-1.5, 1.5)
    ax.set_axis_off()
    ax.set_title("tables (blue: timed) and foreign keys (child -> parent)")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
