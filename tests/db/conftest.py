"""Copies of small databases on the PostgreSQL and MariaDB servers.

The tests write these copies themselves (rdl never writes; file copies come
from :mod:`rdl.testing.files`); each lives in a throwaway schema/database
that is dropped afterwards.
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pandas as pd
import pytest
import sqlalchemy as sa

from rdl.db.sql_source import with_available_driver

POSTGRES_ENV = "RDL_TEST_POSTGRES_URL"
MARIADB_ENV = "RDL_TEST_MARIADB_URL"


def _server_url(env: str) -> sa.URL:
    url = os.environ.get(env)
    if not url:
        pytest.skip(f"{env} is not set (.ci/run sets it to the local server)")
    url = with_available_driver(sa.make_url(url))
    try:
        with sa.create_engine(url).connect():
            pass
    except Exception as exc:  # noqa: BLE001 - any failure means "no server here"
        pytest.skip(f"server at {env} is not reachable: {str(exc).splitlines()[0]}")
    return url


def _copy_into_postgres(table, conn, keys, rows) -> None:
    """pandas ``to_sql`` method that loads rows with COPY (fast)."""
    columns = ", ".join(f'"{k}"' for k in keys)
    with conn.connection.cursor() as cur:
        with cur.copy(f'COPY "{table.schema}"."{table.name}" ({columns}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row(row)


@pytest.fixture
def postgres_db() -> Iterator[Callable[..., tuple[str, str]]]:
    """Returns ``write(tables, ddl) -> (url, schema)`` into a fresh PG schema."""
    url = _server_url(POSTGRES_ENV)
    engine = sa.create_engine(url)
    schema = f"rdl_test_{uuid.uuid4().hex[:10]}"
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))

    def write(tables: dict[str, pd.DataFrame], ddl: str = "") -> tuple[str, str]:
        shown = url.render_as_string(hide_password=False)
        with engine.begin() as conn:
            conn.execute(sa.text(f"SET search_path TO {schema}"))
            for statement in filter(str.strip, ddl.split(";")):
                conn.execute(sa.text(statement))
        for name, df in tables.items():
            df.to_sql(name, engine, schema=schema, index=False, if_exists="append",
                      method=_copy_into_postgres)
        return shown, schema

    yield write
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
    engine.dispose()


@pytest.fixture
def mariadb_db() -> Iterator[Callable[..., str]]:
    """Returns ``write(tables, ddl) -> url`` of a fresh MariaDB database."""
    url = _server_url(MARIADB_ENV)
    server = sa.create_engine(url)
    name = f"rdl_test_{uuid.uuid4().hex[:10]}"
    with server.begin() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    db_url = url.set(database=name)
    engine = sa.create_engine(db_url)

    def write(tables: dict[str, pd.DataFrame], ddl: str = "") -> str:
        with engine.begin() as conn:
            for statement in filter(str.strip, ddl.split(";")):
                conn.execute(sa.text(statement))
        for name_, df in tables.items():
            df.to_sql(name_, engine, index=False, if_exists="append", chunksize=5000)
        return db_url.render_as_string(hide_password=False)

    yield write
    engine.dispose()
    with server.begin() as conn:
        conn.execute(sa.text(f"DROP DATABASE {name}"))
    server.dispose()
