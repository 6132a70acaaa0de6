"""Stage 1 of rdl: read a relational database, its keys, times and column types.

Imports no torch, so that ``rdl inspect`` starts fast.
"""
from rdl.db.connect import build_database, connect
from rdl.db.database import Database
from rdl.db.issues import DataIssue, SchemaError, SourceError
from rdl.db.table import STYPES, Table

__all__ = [
    "Database", "DataIssue", "STYPES", "SchemaError", "SourceError", "Table",
    "build_database", "connect",
]
