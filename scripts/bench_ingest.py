"""How fast rdl reads nycflights13 (0.4M rows, 5 tables) from each backend, beside
the bare driver doing the same read, and rdl's peak memory relative to the
size of the data.

Each measurement runs in a fresh process (peak RSS is per process); the
figure reported is the median of ``--repeat`` runs. The server backends need
RDL_TEST_POSTGRES_URL / RDL_TEST_MARIADB_URL and are skipped without them.
``--rows N`` keeps the first N rows of each table: a quick check that every
backend still runs, not a measurement.

    python scripts/bench_ingest.py [--repeat 3] [--rows N]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pandas as pd
import sqlalchemy as sa

from rdl.datasets import nycflights13
from rdl.db.sql_source import with_available_driver

# Code run in the child process: {setup} prepares, then only {work} is timed.
# Peak memory is VmHWM (per address space, so not inherited from the parent
# across fork+exec the way ru_maxrss is).
CHILD = """
import json, re, time
def high_water_kib():
    return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
{imports}
base = high_water_kib()
start = time.perf_counter()
{work}
elapsed = time.perf_counter() - start
print(json.dumps({{"seconds": elapsed, "rows": rows, "extra_mib": (high_water_kib() - base) / 1024}}))
"""

RDL_READ = dict(
    imports="from rdl.db.connect import connect",
    work="db = connect({source!r}, schema={schema_file!r}, sql_schema={schema!r}); "
         "rows = sum(len(t) for t in db)",
)


def driver_read(kind: str) -> dict:
    """The same five tables read by the bare driver, as fast as it goes (the
    server drivers through their own cursor: no SQLAlchemy row objects)."""
    loop = "rows = 0\nfor t in {tables!r}:\n    "
    if kind == "parquet":
        return dict(imports="import pyarrow.parquet as pq",
                    work=loop + "rows += pq.read_table(f'{folder}/{{t}}.parquet').num_rows")
    if kind == "duckdb":
        return dict(imports="import duckdb",
                    work="c = duckdb.connect({path!r}, read_only=True)\n" + loop
                    + "rows += c.sql(f'SELECT * FROM {{t}}').to_arrow_table().num_rows")
    if kind == "sqlite":
        return dict(imports="import sqlite3",
                    work="c = sqlite3.connect({path!r})\n" + loop
                    + "rows += len(c.execute(f'SELECT * FROM {{t}}').fetchall())")
    return dict(imports="import sqlalchemy as sa",
                work="c = sa.create_engine({url!r}).raw_connection().cursor()\n" + loop
                + "c.execute(f'SELECT * FROM {prefix}{{t}}')\n    rows += len(c.fetchall())")


def run_child(spec: dict, fields: dict) -> dict:
    code = CHILD.format(imports=spec["imports"], work=spec["work"].format(**fields))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1])
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_of(repeat: int, spec: dict, fields: dict) -> dict:
    runs = [run_child(spec, fields) for _ in range(repeat)]
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "extra_mib": statistics.median(r["extra_mib"] for r in runs),
        "rows": runs[0]["rows"],
    }


def copy_into_postgres(table, conn, keys, rows) -> None:
    """pandas ``to_sql`` method loading rows with PostgreSQL's COPY."""
    columns = ", ".join(f'"{k}"' for k in keys)
    with conn.connection.cursor() as cur:
        with cur.copy(f'COPY "{table.schema}"."{table.name}" ({columns}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row(row)


def load_tables(rows: int | None) -> dict[str, pd.DataFrame]:
    """The flights tables, each cut to its first ``rows`` rows if given."""
    folder = nycflights13.path()
    return {name: pd.read_parquet(folder / f"{name}.parquet").head(rows) for name in nycflights13.TABLES}


def prepare(workdir: Path, tables: dict[str, pd.DataFrame], rows: int | None) -> tuple[list[dict], list]:
    """Writes the flights database into every available backend."""
    folder = nycflights13.path()
    if rows is not None:  # the cut tables, as the parquet backend
        folder = workdir / "parquet"
        folder.mkdir()
        for name, df in tables.items():
            df.to_parquet(folder / f"{name}.parquet", index=False)
    tables = {name: df.copy() for name, df in tables.items()}
    for df in tables.values():
        for col in df.columns:
            if isinstance(df[col].dtype, pd.DatetimeTZDtype):
                df[col] = df[col].dt.tz_convert("UTC").dt.tz_localize(None)
    backends = [{"kind": "parquet", "source": str(folder), "folder": str(folder)}]

    sqlite_path = workdir / "flights.db"
    import sqlite3

    con = sqlite3.connect(sqlite_path)
    for name, df in tables.items():
        df.to_sql(name, con, index=False)
    con.close()
    backends.append({"kind": "sqlite", "source": f"sqlite:///{sqlite_path}", "path": str(sqlite_path)})

    import duckdb

    duck_path = workdir / "flights.duckdb"
    con = duckdb.connect(str(duck_path))
    for name, df in tables.items():
        con.register("incoming", df)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM incoming").fetchall()
        con.unregister("incoming")
    con.close()
    backends.append({"kind": "duckdb", "source": f"duckdb:///{duck_path}", "path": str(duck_path)})

    cleanups = []
    for kind, env in (("postgresql", "RDL_TEST_POSTGRES_URL"), ("mariadb", "RDL_TEST_MARIADB_URL")):
        url = os.environ.get(env)
        if not url:
            print(f"{kind}: skipped ({env} not set)")
            continue
        url = with_available_driver(sa.make_url(url))
        name = f"rdl_bench_{uuid.uuid4().hex[:8]}"
        admin = sa.create_engine(url)
        with admin.begin() as conn:
            conn.execute(sa.text(f"CREATE {'SCHEMA' if kind == 'postgresql' else 'DATABASE'} {name}"))
        if kind == "postgresql":
            target, schema, prefix = url, name, f"{name}."
        else:
            target, schema, prefix = url.set(database=name), None, ""
        engine = sa.create_engine(target)
        for table, df in tables.items():
            df.to_sql(table, engine, schema=schema, index=False, chunksize=20_000,
                      method=copy_into_postgres if kind == "postgresql" else None)
        engine.dispose()
        shown = target.render_as_string(hide_password=False)
        backends.append({"kind": kind, "source": shown, "url": shown, "schema": schema,
                         "prefix": prefix})
        cleanups.append((admin, kind, name))
    return backends, cleanups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=None,
                        help="keep the first ROWS rows of each table (default: all)")
    args = parser.parse_args()
    frames = load_tables(args.rows)
    total_rows = sum(len(f) for f in frames.values())
    raw_mib = sum(f.memory_usage(deep=True).sum() for f in frames.values()) / 2**20
    print(f"nycflights13: {total_rows:,} rows in 5 tables, {raw_mib:.0f} MiB as pandas DataFrames")
    print("rdl speed = driver time / rdl time (1.00: rdl costs nothing on top of the driver)")
    print("rdl = rdl.connect (read + keys + times + stypes); driver = the bare driver "
          "reading the same tables (rows only)")
    with tempfile.TemporaryDirectory() as tmp:
        backends, cleanups = prepare(Path(tmp), frames, args.rows)
        try:
            header = f"{'backend':<11}{'rdl rows/s':>13}{'driver rows/s':>15}{'rdl speed':>12}{'rdl peak MiB':>14}{'x data':>8}"
            print(header)
            for b in backends:
                fields = {"tables": list(nycflights13.TABLES), "schema": b.get("schema"),
                          "schema_file": str(nycflights13.SCHEMA_FILE), **b}
                ours = median_of(args.repeat, RDL_READ, fields)
                bare = median_of(args.repeat, driver_read(b["kind"]), fields)
                ours_rate = total_rows / ours["seconds"]
                bare_rate = bare["rows"] / bare["seconds"]
                print(f"{b['kind']:<11}{ours_rate:>13,.0f}{bare_rate:>15,.0f}"
                      f"{bare['seconds'] / ours['seconds']:>12.2f}{ours['extra_mib']:>14.0f}"
                      f"{ours['extra_mib'] / raw_mib:>8.1f}")
        finally:
            for admin, kind, name in cleanups:
                with admin.begin() as conn:
                    conn.execute(sa.text(
                        f"DROP SCHEMA {name} CASCADE" if kind == "postgresql" else f"DROP DATABASE {name}"))
                admin.dispose()


if __name__ == "__main__":
    main()
