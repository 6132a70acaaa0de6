"""Writes the retail tables, chunk by chunk, to parquet files or a DuckDB file.

Both sinks write under a temporary name and move the result into place only
when every table is complete, so an interrupted run leaves no half database.
"""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rdl.datasets.retail.purchases import draw_block, num_blocks
from rdl.datasets.retail.tables import ENTITY_TABLES, TableSpec, entity_tables, table_specs
from rdl.datasets.retail.world import World

_DUCKDB_TYPES = {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "VARCHAR",
                 pa.bool_(): "BOOLEAN", pa.timestamp("us"): "TIMESTAMP"}


class ParquetSink:
    """One parquet file per table of ``specs`` in ``folder``, one row group per write."""

    def __init__(self, folder: Path, specs: dict[str, TableSpec]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.final = {name: folder / f"{name}.parquet" for name in specs}
        self.temp = {name: folder / f".{name}.parquet.tmp" for name in specs}
        self.writers = {name: pq.ParquetWriter(self.temp[name], spec.schema,
                                               use_dictionary=_repeating_columns(spec))
                        for name, spec in specs.items()}

    def write(self, name: str, table: pa.Table) -> None:
        self.writers[name].write_table(table, row_group_size=max(1, len(table)))

    def close(self) -> None:
        for name, writer in self.writers.items():
            writer.close()
            os.replace(self.temp[name], self.final[name])

    def abort(self) -> None:
        for name, writer in self.writers.items():
            writer.close()
            self.temp[name].unlink(missing_ok=True)


class DuckDBSink:
    """A DuckDB file whose tables (``specs``) declare their primary and foreign keys."""

    def __init__(self, path: Path, specs: dict[str, TableSpec]) -> None:
        import duckdb

        path.parent.mkdir(parents=True, exist_ok=True)
        self.final = path
        self.temp = path.with_name(f".{path.name}.tmp")
        self.temp.unlink(missing_ok=True)
        self.con = duckdb.connect(str(self.temp))
        for name in specs:
            self.con.execute(create_table_sql(name, specs))

    def write(self, name: str, table: pa.Table) -> None:
        self.con.register("_chunk", table)
        self.con.execute(f'INSERT INTO "{name}" SELECT * FROM _chunk')
        self.con.unregister("_chunk")

    def close(self) -> None:
        self.con.close()
        os.replace(self.temp, self.final)

    def abort(self) -> None:
        self.con.close()
        self.temp.unlink(missing_ok=True)


def _repeating_columns(spec: TableSpec) -> list[str]:
    """Columns worth dictionary-encoding: foreign keys and text. (Unique
    columns would only fill a dictionary and fall back, costing time.)"""
    return [f.name for f in spec.schema if f.name in spec.foreign_keys or f.type == pa.string()]


def create_table_sql(name: str, specs: dict[str, TableSpec]) -> str:
    """``CREATE TABLE`` with the table's primary key and foreign keys."""
    spec = specs[name]
    lines = [f'"{f.name}" {_DUCKDB_TYPES[f.type]}' for f in spec.schema]
    lines.append(f'PRIMARY KEY ("{spec.primary_key}")')
    lines += [f'FOREIGN KEY ("{col}") REFERENCES "{parent}" ("{specs[parent].primary_key}")'
              for col, parent in spec.foreign_keys.items()]
    return f'CREATE TABLE "{name}" (\n  ' + ",\n  ".join(lines) + "\n)"


def write_tables(world: World, sink: ParquetSink | DuckDBSink, chunk_size: int, *,
                 repeats: bool = True, wide: bool = False) -> dict[str, int]:
    r"""Writes the entity tables whole and the event tables in chunks.

    Blocks of customers are drawn one at a time and buffered; once the
    buffered transactions reach ``chunk_size`` rows, they and the buffered
    rows of the other event tables (which only reference them, each other
    or earlier rows) are written. Memory therefore holds at most
    ``chunk_size`` transactions (and their events) plus one block.

    Returns:
        Rows written per table.
    """
    counts: dict[str, int] = {}
    events = [name for name in table_specs(wide) if name not in ENTITY_TABLES]
    try:
        for name, table in entity_tables(world).items():
            sink.write(name, table)
            counts[name] = len(table)
        buffers: dict[str, list[pa.Table]] = {}
        for block in range(num_blocks(world)):
            first = {name: counts.get(name, 0) + sum(map(len, buffers.get(name, [])))
                     for name in events}
            for name, table in draw_block(world, block, first, repeats=repeats,
                                          wide=wide).items():
                buffers.setdefault(name, []).append(table)
            if sum(map(len, buffers["transactions"])) >= chunk_size:
                _flush(sink, buffers, counts)
        _flush(sink, buffers, counts)
    except BaseException:
        sink.abort()
        raise
    sink.close()
    return counts


def _flush(sink: ParquetSink | DuckDBSink, buffers: dict[str, list[pa.Table]],
           counts: dict[str, int]) -> None:
    for name, tables in buffers.items():  # drawn parents first: children reference them
        rows = sum(map(len, tables))
        if rows:
            sink.write(name, pa.concat_tables(tables))
        counts[name] = counts.get(name, 0) + rows
        tables.clear()
