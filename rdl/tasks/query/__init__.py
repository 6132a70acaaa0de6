"""The predictive query language: tokens, syntax tree, parser, name resolution
against a schema, and compilation to DuckDB SQL.

:mod:`rdl.tasks` builds a :class:`~rdl.tasks.Task` on top of it; nothing here
knows about splits, label tables or metrics.
"""
from rdl.tasks.query.parser import parse
from rdl.tasks.query.resolve import ResolvedQuery, resolve_query
from rdl.tasks.query.to_sql import history_sql, label_sql

__all__ = ["parse", "resolve_query", "ResolvedQuery", "label_sql", "history_sql"]
