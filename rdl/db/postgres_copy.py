"""PostgreSQL's fast path: ``COPY (SELECT ...) TO STDOUT`` as CSV, parsed by
Arrow's multi-threaded CSV reader instead of building Python rows."""
from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.csv as pv
import sqlalchemy as sa

# SQL types the CSV text of PostgreSQL maps onto exactly; anything else
# (arrays, JSON, time zones, intervals, ...) takes the generic row path.
_SIMPLE = ((sa.Boolean, pa.bool_()), (sa.Integer, pa.int64()), (sa.Float, pa.float64()),
           (sa.Numeric, pa.float64()), (sa.Date, pa.date32()), (sa.String, pa.string()))


def copy_arrow_type(sql_type: sa.types.TypeEngine) -> pa.DataType | None:
    """The Arrow type of a column that COPY's CSV renders losslessly, else None."""
    if isinstance(sql_type, sa.DateTime):
        return None if sql_type.timezone else pa.timestamp("us")
    for sql_class, arrow_type in _SIMPLE:
        if isinstance(sql_type, sql_class):
            return arrow_type
    return None


def fetch_with_copy(conn: sa.Connection, query: sa.Select, columns: list[dict]) -> pa.Table | None:
    """Runs ``query`` (selecting ``columns``) with COPY, or returns ``None``
    when the driver is not psycopg 3 or a column type needs the generic path.

    COPY takes no bound parameters, so the query's values (rdl's own time
    bounds, never user text) are rendered as SQL literals."""
    dbapi = conn.connection.dbapi_connection
    if type(dbapi).__module__.split(".")[0] != "psycopg":
        return None
    types = {c["name"]: copy_arrow_type(c["type"]) for c in columns}
    if any(t is None for t in types.values()):
        return None
    select = query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True})
    buffer = io.BytesIO()
    with dbapi.cursor() as cursor:
        with cursor.copy(f"COPY ({select}) TO STDOUT WITH (FORMAT csv)") as copy:
            for block in copy:
                buffer.write(block)
    if buffer.tell() == 0:
        return pa.schema(list(types.items())).empty_table()
    buffer.seek(0)
    return pv.read_csv(
        buffer,
        read_options=pv.ReadOptions(column_names=list(types)),
        parse_options=pv.ParseOptions(newlines_in_values=True),
        convert_options=pv.ConvertOptions(
            column_types=types, null_values=[""], strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            true_values=["t"], false_values=["f"],
        ),
    )
