"""JSON objects stored as text, read as the records they are.

Application databases keep attributes in a JSON column (``props`` of a user:
``{"plan": "pro", "age": 21}``). PostgreSQL's ``jsonb`` and DuckDB's
``STRUCT`` reach rdl as records, and :mod:`rdl.db.raw` splits a record into a
column per field (``props.plan``, ``props.age``). MySQL and MariaDB's
``JSON``, SQLite and CSV files hand over the same objects as text, which was
one category per distinct text. A text column whose values are all JSON
objects, or arrays of numbers or strings, is parsed into records or lists
here, so the same split and the ``multicategorical`` rule apply. A column
stays text where a field's values have different JSON types, where arrays
hold objects, or where the objects have more than :data:`MAX_FIELDS` fields
(an event's free-form properties), which is reported; values that are no
JSON become NULL and are counted.
"""
from __future__ import annotations

import json

import pyarrow as pa

from rdl.db.issues import DataIssue

MAX_FIELDS = 64
_SAMPLE = 200


def parse_json_text(table: str, data: pa.Table) -> tuple[pa.Table, list[DataIssue]]:
    """``data`` with each text column of JSON objects or arrays as records
    or lists (see the module docstring), and the reports."""
    issues: list[DataIssue] = []
    for i, name in enumerate(data.column_names):
        column = data.column(i)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        if not _looks_like_json(column):
            continue
        parsed, unread, why = _parse(column)
        if parsed is None:
            issues.append(DataIssue("json_text", table, name, 0, "kept as text", why))
            continue
        data = data.set_column(i, name, parsed)
        if unread:
            issues.append(DataIssue("json_text", table, name, unread, "value set to NULL",
                                    "value is not JSON in a column of JSON objects"))
    return data, issues


def _looks_like_json(column: pa.ChunkedArray) -> bool:
    """Whether a sample of the values are all JSON objects or arrays."""
    sample = column.slice(0, 10 * _SAMPLE).drop_null()[:_SAMPLE].to_pylist()
    if not sample:
        return False
    for value in sample:
        text = value.strip()
        if (text[:1], text[-1:]) not in (("{", "}"), ("[", "]")):
            return False
        try:
            json.loads(text)
        except ValueError:
            return False
    return True


def _parse(column: pa.ChunkedArray) -> tuple[pa.Array | None, int, str]:
    """The values as records or lists, how many were no JSON, and why a
    column stays text (the array is then ``None``)."""
    values, unread = [], 0
    for text in column.to_pylist():
        try:
            values.append(None if text is None else json.loads(text))
        except ValueError:
            values.append(None)
            unread += 1
    try:
        parsed = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None, unread, "JSON whose fields hold values of different types"
    fields = _leaf_fields(parsed.type)
    if fields is None:
        return None, unread, "JSON arrays that hold objects or arrays"
    if fields > MAX_FIELDS:
        return None, unread, (f"JSON objects with {fields} fields in all, more than "
                              f"{MAX_FIELDS} columns a model could use")
    if fields == 0:
        return None, unread, "JSON objects without fields"
    return parsed, unread, ""


def _leaf_fields(arrow_type: pa.DataType) -> int | None:
    """The columns a parsed type splits into, or ``None`` for lists of
    anything but numbers, strings and booleans."""
    if pa.types.is_struct(arrow_type):
        counts = [_leaf_fields(field.type) for field in arrow_type]
        return None if None in counts else sum(counts)
    if pa.types.is_list(arrow_type):
        value = arrow_type.value_type
        flat = (pa.types.is_string(value) or pa.types.is_integer(value)
                or pa.types.is_floating(value) or pa.types.is_boolean(value)
                or pa.types.is_null(value))
        return 1 if flat else None
    return 1
