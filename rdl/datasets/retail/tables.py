"""The tables: their columns, keys, and the rows of the entity tables."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rdl.datasets.retail import params as P
from rdl.datasets.retail.world import World

_US = 1_000_000
_START_US = int(P.START.astype("datetime64[us]").astype(np.int64))


@dataclass(frozen=True)
class TableSpec:
    """Columns, primary key and foreign keys (column -> table) of one table."""

    schema: pa.Schema
    primary_key: str
    foreign_keys: dict[str, str]


TABLES: dict[str, TableSpec] = {
    "customers": TableSpec(pa.schema([
        ("customer_id", pa.int64()), ("signup_date", pa.timestamp("us")), ("age", pa.int64()),
        ("region", pa.string()), ("club_status", pa.string()),
    ]), "customer_id", {}),
    "articles": TableSpec(pa.schema([
        ("article_id", pa.int64()), ("product_group", pa.string()), ("colour", pa.string()),
        ("section", pa.string()), ("price", pa.float64()),
    ]), "article_id", {}),
    "devices": TableSpec(pa.schema([
        ("device_id", pa.int64()), ("first_seen", pa.timestamp("us")),
        ("device_type", pa.string()), ("os", pa.string()),
    ]), "device_id", {}),
    "merchants": TableSpec(pa.schema([
        ("merchant_id", pa.int64()), ("category", pa.string()), ("country", pa.string()),
    ]), "merchant_id", {}),
    "transactions": TableSpec(pa.schema([
        ("transaction_id", pa.int64()), ("customer_id", pa.int64()), ("article_id", pa.int64()),
        ("device_id", pa.int64()), ("merchant_id", pa.int64()), ("t_dat", pa.timestamp("us")),
        ("price", pa.float64()), ("channel", pa.string()), ("is_fraud", pa.bool_()),
    ]), "transaction_id", {
        "customer_id": "customers", "article_id": "articles", "device_id": "devices",
        "merchant_id": "merchants",
    }),
    "fraud_reports": TableSpec(pa.schema([
        ("report_id", pa.int64()), ("transaction_id", pa.int64()), ("device_id", pa.int64()),
        ("merchant_id", pa.int64()), ("reported_at", pa.timestamp("us")),
    ]), "report_id", {
        "transaction_id": "transactions", "device_id": "devices", "merchant_id": "merchants",
    }),
}
ENTITY_TABLES = ("customers", "articles", "devices", "merchants")
EVENT_TABLES = ("transactions", "fraud_reports")


def _event(key: str, parents: dict[str, str], *columns: tuple[str, pa.DataType]) -> TableSpec:
    """An event table: its key, its foreign keys (int64) and its other columns."""
    fields = [(key, pa.int64()), *((c, pa.int64()) for c in parents), *columns]
    return TableSpec(pa.schema(fields), key, parents)


_TIME = pa.timestamp("us")
# The wide schema's extra tables (``wide=True``), in the order they are drawn.
WIDE_TABLES: dict[str, TableSpec] = {
    "returns": _event("return_id", {"transaction_id": "transactions"},
                      ("returned_at", _TIME), ("reason", pa.string())),
    "reviews": _event("review_id", {"customer_id": "customers", "article_id": "articles"},
                      ("created_at", _TIME), ("rating", pa.int64())),
    "review_votes": _event("vote_id", {"review_id": "reviews"},
                           ("voted_at", _TIME), ("helpful", pa.bool_())),
    "support_tickets": _event("ticket_id", {"customer_id": "customers"},
                              ("opened_at", _TIME), ("topic", pa.string())),
    "ticket_messages": _event("message_id", {"ticket_id": "support_tickets"},
                              ("sent_at", _TIME), ("from_agent", pa.bool_()),
                              ("words", pa.int64())),
    "page_views": _event("view_id", {"customer_id": "customers", "article_id": "articles"},
                         ("viewed_at", _TIME), ("seconds", pa.int64())),
    "wishlists": _event("wish_id", {"customer_id": "customers", "article_id": "articles"},
                        ("added_at", _TIME)),
    "app_sessions": _event("session_id", {"customer_id": "customers", "device_id": "devices"},
                           ("started_at", _TIME), ("minutes", pa.float64())),
    "newsletter_opens": _event("open_id", {"customer_id": "customers"},
                               ("opened_at", _TIME), ("clicked", pa.bool_())),
    "addresses": _event("address_id", {"customer_id": "customers"},
                        ("created_at", _TIME), ("region", pa.string())),
}


def table_specs(wide: bool = False) -> dict[str, TableSpec]:
    """Every table written: the six base tables, plus the wide ones if ``wide``."""
    return {**TABLES, **WIDE_TABLES} if wide else dict(TABLES)


def entity_tables(world: World) -> dict[str, pa.Table]:
    """The rows of the four entity tables (everything visible, nothing hidden)."""
    c, a, d, m = world.customers, world.articles, world.devices, world.merchants
    columns = {
        "customers": [_ids(c.signup_s), time_column(c.signup_s), pa.array(c.age),
                      name_column(c.region, P.REGIONS), name_column(c.club, P.CLUB_STATUS)],
        "articles": [_ids(a.group), name_column(a.group, P.PRODUCT_GROUPS),
                     name_column(a.colour, P.COLOURS), name_column(a.section, P.SECTIONS),
                     pa.array(a.price)],
        "devices": [_ids(d.first_seen_s), time_column(d.first_seen_s),
                    name_column(d.kind, P.DEVICE_TYPES), name_column(d.os, d.os_names)],
        "merchants": [_ids(m.category), name_column(m.category, P.MERCHANT_CATEGORIES),
                      name_column(m.country, P.COUNTRIES)],
    }
    return {name: pa.table(cols, schema=TABLES[name].schema) for name, cols in columns.items()}


def _ids(like: np.ndarray) -> pa.Array:
    return pa.array(np.arange(len(like), dtype=np.int64))


def time_column(seconds: np.ndarray) -> pa.Array:
    """Seconds since :obj:`params.START` as a timestamp column."""
    return pa.array((_START_US + seconds * _US).view("datetime64[us]"))


def name_column(codes: np.ndarray, names: tuple[str, ...]) -> pa.Array:
    """Category codes as a plain string column (Parquet still stores a dictionary)."""
    return pa.DictionaryArray.from_arrays(
        pa.array(codes.astype(np.int32)), pa.array(names)).cast(pa.string())
