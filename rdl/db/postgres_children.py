"""PostgreSQL tables whose rows another table already returns: partitions of a
partitioned table, and tables that ``INHERITS`` from another (the older way to
partition, as in Sakila's PostgreSQL port: ``payment_p2007_01 ... INHERITS
(payment)``). ``SELECT`` from the parent returns the children's rows too, so
read beside it every such row would be counted twice; the parent is read
alone, and each parent's children are reported."""
from __future__ import annotations

import sqlalchemy as sa

from rdl.db.issues import DataIssue

_CHILDREN = """
SELECT c.relname, p.relname, {partition}
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname = coalesce(:schema, current_schema())
"""

# Columns an inheriting table declares itself (not from a parent): PostgreSQL
# returns a child's rows through its parent with the parent's columns only.
_OWN_COLUMNS = """
SELECT c.relname, a.attname
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attinhcount = 0
  AND c.relname = ANY(:tables) AND n.nspname = coalesce(:schema, current_schema())
ORDER BY c.relname, a.attnum
"""


def read_through_parents(conn: sa.Connection, sql_schema: str | None
                         ) -> tuple[set[str], list[DataIssue]]:
    """The tables of ``sql_schema`` that are read through a parent (not as
    tables of their own), and one report per top parent naming them."""
    version = getattr(conn.dialect, "server_version_info", None) or (0,)
    partition = "c.relispartition" if version >= (10,) else "false"  # partitions since 10
    rows = conn.execute(sa.text(_CHILDREN.format(partition=partition)),
                        {"schema": sql_schema}).all()
    links = [(child, parent) for child, parent, _ in rows]
    inheriting = sorted(child for child, _, is_partition in rows if not is_partition)
    own_columns: dict[str, list[str]] = {}
    if inheriting:
        for table, column in conn.execute(sa.text(_OWN_COLUMNS),
                                          {"tables": inheriting, "schema": sql_schema}):
            own_columns.setdefault(table, []).append(column)
    children = {child for child, _ in links}
    issues = [_report(parent, links, set(inheriting), own_columns)
              for parent in sorted({parent for _, parent in links} - children)]
    return children, issues


def _report(parent: str, links: list[tuple[str, str]], inheriting: set[str],
            own_columns: dict[str, list[str]]) -> DataIssue:
    below = _descendants(parent, links)
    partitions = sorted(t for t in below if t not in inheriting and _is_leaf(t, links))
    heirs = sorted(t for t in below if t in inheriting)
    parts = []
    if partitions:
        parts.append(f"{_count(partitions, 'partition')} ({_some(partitions)}) "
                     f"hold{'s' * (len(partitions) == 1)} its rows")
    if heirs:
        parts.append(f"{_count(heirs, 'table')} inherit{'s' * (len(heirs) == 1)} from it "
                     f"({_some(heirs)}), and PostgreSQL returns their rows as its own")
    message = " and ".join(parts) + "; none is read as a table of its own"
    unread = [f"{table}.{column}" for table in heirs for column in own_columns.get(table, [])]
    if unread:
        message += (f"; the columns only they declare are not read ({_some(unread)}): "
                    "copy them into a table to give them to a model")
    action = ("read through the partitioned table" if not heirs
              else "read through the parent table")
    return DataIssue("partitions", parent, None, len(partitions) + len(heirs), action, message)


def _descendants(table: str, links: list[tuple[str, str]]) -> list[str]:
    children = [child for child, parent in links if parent == table]
    return [t for child in children for t in (child, *_descendants(child, links))]


def _is_leaf(table: str, links: list[tuple[str, str]]) -> bool:
    """A partition that holds rows: one not partitioned again."""
    return all(parent != table for _, parent in links)


def _count(names: list[str], noun: str) -> str:
    return f"{len(names)} {noun}{'s' * (len(names) != 1)}"


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + ", ..." * (len(names) > 3)
