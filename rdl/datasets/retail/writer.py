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
from rdl.datasets.retail.tables import (
    ENTITY_TABLES, EVENT_TABLES, TABLES, TableSpec, entity_tables,
)
from rdl.datasets.retail.world import World

_DUCKDB_TYPES = {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "VARCHAR",
                 pa.bool_(): "BOOLEAN", pa.timestamp("us"): "TIMESTAMP"}


class ParquetSink:
    """One parquet file per table in ``folder``, one row group per write."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.final = {name: folder / f"{name}.parquet" for name in TABLES}
        self.temp = {name: folder / f".{name}.parquet.tmp" for name in TABLES}
        self.writers = {name: pq.ParquetWriter(self.temp[name], spec.schema,
                                               use_dictionary=_repeating_columns(spec))
                        for name, spec in TABLES.items()}

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
    """A DuckDB file whose tables declare their primary and foreign keys."""

    def __init__(self, path: Path) -> None:
        import duckdb

        path.parent.mkdir(parents=True, exist_ok=True)
        self.final = path
        self.temp = path.with_name(f".{path.name}.tmp")
        self.temp.unlink(missing_ok=True)
        self.con = duckdb.connect(str(self.temp))
        for name in TABLES:
            self.con.execute(create_table_sql(name))

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


def create_table_sql(name: str) -> str:
    """``CREATE TABLE`` with the table's primary key and foreign keys."""
    spec = TABLES[name]
    lines = [f'"{f.name}" {_DUCKDB_TYPES[f.type]}' for f in spec.schema]
    lines.append(f'PRIMARY KEY ("{spec.primary_key}")')
    lines += [f'FOREIGN KEY ("{col}") REFERENCES "{parent}" ("{TABLES[parent].primary_key}")'
              for col, parent in spec.foreign_keys.items()]
    return f'CREATE TABLE "{name}" (\n  ' + ",\n  ".join(lines) + "\n)"


def write_tables(world: World, sink: ParquetSink | DuckDBSink, chunk_size: int) -> dict[str, int]:
    r"""Writes the entity tables whole and the event tables in chunks.

    Blocks of customers are drawn one at a time and buffered; once the
    buffered transactions reach ``chunk_size`` rows, they and the buffered
    fraud reports (which only reference them or earlier rows) are written.
    Memory therefore holds at most ``chunk_size`` rows plus one block.

    Returns:
        Rows written per table.
    """
    counts = {}
    try:
        for name, table in entity_tables(world).items():
            sink.write(name, table)
            counts[name] = len(table)
        buffers: dict[str, list[pa.Table]] = {name: [] for name in EVENT_TABLES}
        counts.update({name: 0 for name in EVENT_TABLES})
        buffered = 0
        for block in range(num_blocks(world)):
            tables = draw_block(world, block, counts["transactions"] + buffered,
                                counts["fraud_reports"] + sum(map(len, buffers["fraud_reports"])))
            for name, table in zip(EVENT_TABLES, tables):
                buffers[name].append(table)
            buffered += len(tables[0])
            if buffered >= chunk_size:
                _flush(sink, buffers, counts)
                buffered = 0
        _flush(sink, buffers, counts)
    except BaseException:
        sink.abort()
        raise
    sink.close()
    return {name: counts[name] for name in ENTITY_TABLES + EVENT_TABLES}


def _flush(sink: ParquetSink | DuckDBSink, buffers: dict[str, list[pa.Table]],
           counts: dict[str, int]) -> None:
    for name in EVENT_TABLES:  # transactions first: reports reference them
        if buffers[name]:
            table = pa.concat_tables(buffers[name])
            if len(table):
                sink.write(name, table)
            counts[name] += len(table)
            buffers[name].clear()
