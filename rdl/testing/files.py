"""Small databases written to files, for tests of reading them.

rdl never writes a source database, so the tests write their own copies: a
folder of parquet files, a SQLite file or a DuckDB file, from frames (and
optional DDL run first, to declare keys and types).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pandas as pd


def write_parquet(folder: Path, tables: dict[str, pd.DataFrame]) -> Path:
    """One ``NAME.parquet`` per frame in ``folder`` (created if missing);
    returns ``folder``."""
    folder.mkdir(exist_ok=True)
    for name, df in tables.items():
        df.to_parquet(folder / f"{name}.parquet", index=False)
    return folder


def write_sqlite(path: str | Path, tables: dict[str, pd.DataFrame], ddl: str = "") -> str:
    """Runs ``ddl``, then appends each frame to its table, in a SQLite file
    at ``path``; returns the file's URL."""
    con = sqlite3.connect(path)
    if ddl:
        con.executescript(ddl)
    for name, df in tables.items():
        df.to_sql(name, con, index=False, if_exists="append")
    con.commit()
    con.close()
    return f"sqlite:///{path}"


def write_duckdb(path: str | Path, tables: dict[str, pd.DataFrame], ddl: str = "") -> str:
    """Runs ``ddl``, then fills each table (created from its frame unless
    ``ddl`` declared it), in a DuckDB file at ``path``; returns its URL."""
    con = duckdb.connect(str(path))
    for statement in filter(str.strip, ddl.split(";")):
        con.execute(statement).fetchall()
    for name, df in tables.items():
        exists = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]
        ).fetchall()[0][0]
        verb = f'INSERT INTO "{name}"' if exists else f'CREATE TABLE "{name}" AS'
        # Declared tables get one row per statement: DuckDB checks a
        # self-referencing key against the rows already stored.
        chunks = [df.iloc[[i]] for i in range(len(df))] if exists else [df]
        for chunk in chunks:
            con.register("incoming", chunk)
            con.execute(f"{verb} SELECT * FROM incoming").fetchall()
            con.unregister("incoming")
    con.close()
    return f"duckdb:///{path}"
