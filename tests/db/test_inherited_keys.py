"""``foreign_keys: {CustomerId: {from: InvoiceId}}``: invoice lines take their invoice's
customer, checked against a brute-force lookup, and a task can then predict per customer
from the lines."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db.issues import SchemaError
from rdl.graph import build_graph
from rdl.tasks import Task
from rdl.tasks.errors import QueryError

DAY = pd.Timedelta(days=1)
START = pd.Timestamp("2024-01-01")
CUSTOMERS = 4


def _shop(folder, invoice_customers: list[int | None], line_refs: list[int | None],
          line_tracks: list[int] | None = None) -> dict:
    """Customers 0..3; invoice i on day i of customer ``invoice_customers[i]`` (None: none,
    4 or more: a customer that does not exist); lines naming an invoice (None: none, past
    the last invoice: dangling)."""
    folder.mkdir(exist_ok=True)
    pd.DataFrame({"CustomerId": range(CUSTOMERS)}).to_parquet(folder / "Customer.parquet")
    pd.DataFrame({"InvoiceId": range(len(invoice_customers)),
                  "CustomerId": pd.array(invoice_customers, dtype="Int64"),
                  "InvoiceDate": [START + i * DAY for i in range(len(invoice_customers))]}
                 ).to_parquet(folder / "Invoice.parquet")
    tracks = line_tracks or [0] * len(line_refs)
    pd.DataFrame({"TrackId": range(10)}).to_parquet(folder / "Track.parquet")
    pd.DataFrame({"InvoiceLineId": range(len(line_refs)),
                  "InvoiceId": pd.array(line_refs, dtype="Int64"),
                  "TrackId": tracks}).to_parquet(folder / "InvoiceLine.parquet")
    return {"tables": {
        "Customer": {"primary_key": "CustomerId", "time_column": None},
        "Track": {"primary_key": "TrackId", "time_column": None},
        "Invoice": {"primary_key": "InvoiceId", "time_column": "InvoiceDate",
                    "foreign_keys": {"CustomerId": "Customer"}},
        "InvoiceLine": {"primary_key": "InvoiceLineId",
                        "foreign_keys": {"InvoiceId": "Invoice", "TrackId": "Track",
                                         "CustomerId": {"from": "InvoiceId"}},
                        "time_column": {"from": "InvoiceId"}}}}


def _brute_force_customer(invoice_customers, ref):
    """The customer a line's invoice names, if both exist; else None."""
    if ref is None or ref >= len(invoice_customers):
        return None
    customer = invoice_customers[ref]
    return customer if customer is not None and customer < CUSTOMERS else None


@settings(max_examples=30, deadline=None)
@given(customers=st.lists(st.one_of(st.none(), st.integers(0, CUSTOMERS + 1)),
                          min_size=1, max_size=8),
       refs=st.lists(st.one_of(st.none(), st.integers(0, 9)), min_size=1, max_size=20),
       timed=st.booleans())
def test_each_line_takes_its_invoices_customer_and_dangling_ones_are_counted(
        tmp_path_factory, customers, refs, timed):
    folder = tmp_path_factory.mktemp("shop")
    schema = _shop(folder, customers, refs)
    if not timed:  # static lines: those naming no invoice are kept, with no customer
        schema["tables"]["InvoiceLine"]["time_column"] = None
    db = rdl.connect(folder, schema=schema)
    lines = db["InvoiceLine"]
    assert lines.foreign_keys["CustomerId"] == "Customer"
    assert "CustomerId" not in lines.stypes  # a key, not a feature
    kept = [(i, ref) for i, ref in enumerate(refs)
            if not timed or (ref is not None and ref < len(customers))]
    assert lines.df["InvoiceLineId"].tolist() == [i for i, _ in kept]
    for line, got in zip(lines.df["InvoiceLineId"], lines.df["CustomerId"]):
        expected = _brute_force_customer(customers, refs[line])
        assert (pd.isna(got) if expected is None else got == expected), line
    dangling = sum(1 for _, ref in kept if ref is not None and ref < len(customers)
                   and customers[ref] is not None and customers[ref] >= CUSTOMERS)
    counted = sum(i.count for i in db.issues if i.table == "InvoiceLine"
                  and i.column == "CustomerId" and i.kind == "dangling_foreign_key")
    assert counted == dangling


def test_a_chain_of_inherited_keys_and_the_errors(tmp_path):
    folder = tmp_path / "shop"
    schema = _shop(folder, [0, 3], [0, 1, 1])
    pd.DataFrame({"NoteId": [0, 1, 2], "InvoiceLineId": [2, 0, 1]}).to_parquet(
        folder / "Note.parquet")
    schema["tables"]["Note"] = {"primary_key": "NoteId",
                                "foreign_keys": {"InvoiceLineId": "InvoiceLine",
                                                 "buyer": {"from": "InvoiceLineId",
                                                           "column": "CustomerId"}}}
    notes = rdl.connect(folder, schema=schema)["Note"]
    assert notes.df["buyer"].tolist() == [3, 0, 3]
    assert notes.foreign_keys["buyer"] == "Customer"

    def error(table: str, keys: dict) -> str:
        bad = {"tables": {**schema["tables"]}}
        bad["tables"][table] = {**bad["tables"][table],
                                "foreign_keys": {**bad["tables"][table]["foreign_keys"], **keys}}
        with pytest.raises(SchemaError) as caught:
            rdl.connect(folder, schema=bad)
        return str(caught.value)

    assert "one-column foreign key of 'Note'" in error("Note", {"x": {"from": "NoteId"}})
    assert "InvoiceLine.InvoiceLineId, which is not a one-column foreign key" in error(
        "Note", {"x": {"from": "InvoiceLineId", "column": "InvoiceLineId"}})
    assert "adds a column the table already has" in error(
        "InvoiceLine", {"TrackId2": {"from": "InvoiceId"}, "InvoiceLineId": {"from": "TrackId"}})
    assert "no column 'Nope'" in error("Note", {"x": {"from": "Nope"}})
    assert "takes only 'column'" in error("Note", {"x": {"from": "InvoiceLineId", "to": 1}})


def test_keys_taken_from_each_other_are_an_error(tmp_path):
    folder = tmp_path / "loop"
    folder.mkdir()
    pd.DataFrame({"a": [0], "b_ref": [0], "x": [0]}).to_parquet(folder / "A.parquet")
    pd.DataFrame({"b": [0], "a_ref": [0], "y": [0]}).to_parquet(folder / "B.parquet")
    schema = {"tables": {
        "A": {"primary_key": "a", "time_column": None,
              "foreign_keys": {"b_ref": "B", "z": {"from": "b_ref", "column": "w"}}},
        "B": {"primary_key": "b", "time_column": None,
              "foreign_keys": {"a_ref": "A", "w": {"from": "a_ref", "column": "z"}}}}}
    with pytest.raises(SchemaError, match="take foreign keys from each other"):
        rdl.connect(folder, schema=schema)


def test_a_task_predicts_each_customers_tracks_from_the_lines(tmp_path):
    folder = tmp_path / "shop"
    customers = [0, 1, 0, 2, 1, 0, 3, 1, 2, 0]  # invoice i on day i
    refs = [0, 0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 9]
    tracks = [1, 2, 3, 1, 4, 5, 6, 7, 8, 9, 1, 2, 3]
    schema = _shop(folder, customers, refs, tracks)
    db = rdl.connect(folder, schema=schema)
    query = ("PREDICT LIST_DISTINCT(InvoiceLine.TrackId, 0, 3, days) RANK TOP 3 "
             "FOR EACH Customer.CustomerId")
    task = Task(val_timestamp="2024-01-04", test_timestamp="2024-01-07", query=query)
    times = [START + d * DAY for d in (1, 4)]
    got = task.make_table(db, times)
    expected = {}  # (customer, time) -> tracks in (t, t + 3 days], by brute force
    for line, ref in enumerate(refs):
        day = START + ref * DAY
        for t in times:
            if t < day <= t + 3 * DAY:
                expected.setdefault((customers[ref], t), set()).add(tracks[line])
    assert {(c, t): set(items) for c, t, items in got.itertuples(index=False)} == expected
    # the model reaches a customer's lines in one hop
    src, dst = build_graph(db)["InvoiceLine", "f2p_CustomerId", "Customer"].edge_index
    expected_edges = [(i, customers[r]) for i, r in enumerate(refs)]
    assert sorted(zip(src.tolist(), dst.tolist())) == expected_edges

    del schema["tables"]["InvoiceLine"]["foreign_keys"]["CustomerId"]
    with pytest.raises(QueryError) as caught:
        Task(val_timestamp="2024-01-04", test_timestamp="2024-01-07",
             query=query).check(rdl.connect(folder, schema=schema))
    assert ("'InvoiceLine' reaches 'Customer' through 'Invoice' (InvoiceId): declare "
            "'foreign_keys: {CustomerId: {from: InvoiceId}}' for 'InvoiceLine'"
            in str(caught.value))
