"""Which feature columns each node type has: the one comparison behind "is this
the schema the model (or a saved graph file) was built from?"."""
from __future__ import annotations

from collections.abc import Mapping

from rdl.db.database import Database
from rdl.graph.names import FORWARD_PREFIX, forward_relation, safe_name


def db_feature_columns(db: Database,
                       excluded: Mapping[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Node type -> sorted feature columns that :func:`rdl.graph.build_graph`
    makes of each table of ``db``, ``excluded`` (table -> columns) left out."""
    excluded = excluded or {}
    return {safe_name(table.name): sorted(c for c in table.stypes
                                          if c not in excluded.get(table.name, ()))
            for table in db}


def db_links(db: Database) -> set[tuple[str, str, str]]:
    """The child-to-parent edge types :func:`rdl.graph.build_graph` makes of
    the foreign keys of ``db``: a graph file without one of them (or with one
    more) was built before a key was declared, inherited or removed."""
    return {(safe_name(table.name), forward_relation(column), safe_name(parent))
            for table in db for column, parent in table.foreign_keys.items()}


def graph_links(edge_types: list[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    """The child-to-parent edge types among a graph's ``edge_types``."""
    return {edge for edge in edge_types if edge[1].startswith(FORWARD_PREFIX)}


def spec_feature_columns(col_names_dicts: Mapping[str, Mapping]) -> dict[str, list[str]]:
    """Node type -> sorted feature columns of a graph's or a model's
    ``col_names_dict`` per node type (stype -> columns)."""
    return {nt: sorted(c for cols in d.values() for c in cols)
            for nt, d in col_names_dicts.items()}


def schema_mismatch(expected: Mapping[str, list[str]],
                    actual: Mapping[str, list[str]]) -> str | None:
    """What differs between two :func:`db_feature_columns`-style maps, in
    words, or ``None``. Node types only in ``actual`` are allowed (a model
    ignores tables it was not trained on); a node type without features may
    be absent from ``expected``."""
    missing = sorted(set(expected) - set(actual))
    if missing:
        return f"tables {missing} are missing from the database"
    for nt in sorted(expected):
        if expected[nt] != actual[nt]:
            return f"table {nt!r} had feature columns {expected[nt]}, it now has {actual[nt]}"
    return None


def link_mismatch(expected: set[tuple[str, str, str]],
                  actual: set[tuple[str, str, str]]) -> str | None:
    """What differs between two :func:`db_links`-style sets, in words, or ``None``."""
    if expected == actual:
        return None
    return f"the links {_edges(expected - actual)} are new, {_edges(actual - expected)} gone"


def _edges(edges: set[tuple[str, str, str]]) -> str:
    """Child-to-parent edge types as ``child.column -> parent``, or ``none``."""
    names = sorted(f"{child}.{rel.removeprefix(FORWARD_PREFIX)} -> {parent}"
                   for child, rel, parent in edges)
    return "[" + ", ".join(names) + "]" if names else "none"
