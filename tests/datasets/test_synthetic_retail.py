"""The synthetic retail generator: determinism, keys, formats, and the planted signal,
each measured on generated rows against the documented story."""
from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.datasets import synthetic_retail as sr
from rdl.datasets.retail import params as P
from rdl.datasets.retail.tables import TABLES
from rdl.tasks.run_data import RunData
from rdl.testing.cli import CONFIGS

N = 30_000
START = pd.Timestamp("2023-01-01")


def read_tables(folder: Path) -> dict[str, pd.DataFrame]:
    return {name: pd.read_parquet(folder / f"{name}.parquet") for name in TABLES}


def seconds(times: pd.Series) -> np.ndarray:
    return ((times - START) // pd.Timedelta(seconds=1)).to_numpy(np.int64)


@pytest.fixture(scope="module")
def retail(tmp_path_factory):
    folder = sr.generate(tmp_path_factory.mktemp("retail") / "parquet", N, seed=0)
    return folder, read_tables(folder), sr.ground_truth(N, seed=0)


def test_same_seed_same_bytes_other_seed_other_rows(tmp_path):
    one, two, other = (sr.generate(tmp_path / name, 10_000, seed=seed)
                       for name, seed in (("one", 1), ("two", 1), ("other", 2)))
    for name in TABLES:
        assert (one / f"{name}.parquet").read_bytes() == (two / f"{name}.parquet").read_bytes()
    a, b = read_tables(one)["transactions"], read_tables(other)["transactions"]
    assert not (len(a) == len(b) and a.equals(b))


_SMALL_BLOCKS: dict[str, pd.DataFrame] = {}


@settings(max_examples=8, deadline=None)
@given(chunk_size=st.integers(1, 12_000))
def test_rows_do_not_depend_on_chunk_size(tmp_path_factory, chunk_size):
    with mock.patch.object(P, "BLOCK_CUSTOMERS", 64):  # several blocks at a small size
        if not _SMALL_BLOCKS:
            whole = sr.generate(tmp_path_factory.mktemp("whole"), 10_000, chunk_size=10**9)
            assert pq.ParquetFile(whole / "transactions.parquet").num_row_groups == 1
            _SMALL_BLOCKS.update(read_tables(whole))
        folder = sr.generate(tmp_path_factory.mktemp("chunked"), 10_000, chunk_size=chunk_size)
    for name, want in _SMALL_BLOCKS.items():
        pd.testing.assert_frame_equal(pd.read_parquet(folder / f"{name}.parquet"), want)
    groups = pq.ParquetFile(folder / "transactions.parquet").metadata
    sizes = [groups.row_group(i).num_rows for i in range(groups.num_row_groups)]
    block_rows = (_SMALL_BLOCKS["transactions"]["customer_id"] // 64).value_counts().max()
    assert all(size >= chunk_size for size in sizes[:-1])  # a write per full chunk...
    assert max(sizes) < chunk_size + block_rows  # ...and no more rows held than that


def test_sizes_follow_the_number_of_transactions(retail):
    _, tables, _ = retail
    assert len(tables["customers"]) == round(N / P.TRANSACTIONS_PER_CUSTOMER)
    assert len(tables["articles"]) == round(N / P.TRANSACTIONS_PER_ARTICLE)
    assert abs(len(tables["transactions"]) / N - 1) < 0.1


def test_keys_resolve_and_times_are_consistent(retail):
    _, t, _ = retail
    for name, spec in TABLES.items():
        assert t[name][spec.primary_key].is_unique, name
        for column, parent in spec.foreign_keys.items():
            assert t[name][column].isin(t[parent][TABLES[parent].primary_key]).all(), column
    tx = t["transactions"]
    signup = tx["customer_id"].map(t["customers"].set_index("customer_id")["signup_date"])
    first_seen = tx["device_id"].map(t["devices"].set_index("device_id")["first_seen"])
    assert (tx["t_dat"] >= signup).all() and (tx["t_dat"] >= first_seen).all()
    assert tx["t_dat"].between(START, START + pd.Timedelta(days=P.SPAN_DAYS)).all()
    reports = t["fraud_reports"].merge(tx, on="transaction_id", suffixes=("", "_tx"))
    assert len(reports) == len(t["fraud_reports"]) and reports["is_fraud"].all()
    assert (reports["reported_at"] >= reports["t_dat"] + pd.Timedelta(days=1)).all()
    assert (reports["device_id"] == reports["device_id_tx"]).all()
    assert (reports["merchant_id"] == reports["merchant_id_tx"]).all()


def test_parquet_and_duckdb_read_the_same(retail, tmp_path):
    folder, _, _ = retail
    duck = sr.generate(tmp_path / "retail.duckdb", N, seed=0, format="duckdb", chunk_size=7_000)
    from_parquet = rdl.connect(folder, schema=sr.SCHEMA_FILE)
    from_duckdb = rdl.connect(duck)  # keys from DuckDB's catalog, times inferred
    assert from_parquet.summary() == from_duckdb.summary()
    assert from_parquet.issues == [] and from_duckdb.issues == []
    for table in from_parquet:
        pd.testing.assert_frame_equal(table.df, from_duckdb[table.name].df)
    tx = from_duckdb["transactions"]
    assert (tx.primary_key, tx.time_column) == ("transaction_id", "t_dat")
    assert tx.stypes == {"t_dat": "timestamp", "price": "numerical", "channel": "categorical",
                         "is_fraud": "categorical"}
    assert from_duckdb["articles"].time_column is None
    assert from_duckdb["merchants"].time_column is None
    assert not any(c.endswith("_id") for table in from_duckdb for c in table.stypes)


def test_fraud_rate_matches_the_formula(retail):
    _, t, truth = retail
    tx = t["transactions"]
    at = seconds(tx["t_dat"])
    device = at >= truth.devices.compromised_s[tx["device_id"]]
    merchant = at >= truth.merchants.compromised_s[tx["merchant_id"]]
    p = 1 - (1 - P.FRAUD_BASE) * (1 - P.DEVICE_FRAUD * device) * (1 - P.MERCHANT_FRAUD * merchant)
    assert 0.005 < tx["is_fraud"].mean() < 0.04
    for rows in (device, ~device & ~merchant, ~device & merchant):
        if rows.sum() < 200:
            continue
        observed, expected = tx["is_fraud"][rows].mean(), p[rows].mean()
        sd = np.sqrt(expected * (1 - expected) / rows.sum())
        assert abs(observed - expected) < 4 * sd + 1e-3


def test_fraud_reports_reveal_compromised_devices(retail):
    _, t, _ = retail
    tx = t["transactions"]
    first_report = tx["device_id"].map(t["fraud_reports"].groupby("device_id")["reported_at"].min())
    after = tx["t_dat"] > first_report
    assert after.sum() > 200
    assert tx["is_fraud"][after].mean() > 4 * tx["is_fraud"][~after].mean()


def test_quality_churn_matches_p_stop(retail):
    _, t, truth = retail
    tx = t["transactions"].sort_values(["customer_id", "t_dat", "transaction_id"])
    last = ~tx["customer_id"].duplicated(keep="last")
    # purchases well before the end, by customers no lifetime or shock stops:
    # a last purchase there is (almost only) quality churn
    open_ended = truth.customers.end_s[tx["customer_id"]] == P.SPAN_S
    early = seconds(tx["t_dat"]) < P.SPAN_S - 120 * 86_400
    rows = open_ended & early
    p = truth.articles.stop_p[tx["article_id"]][rows]
    stopped = last[rows].to_numpy()
    bins = np.digitize(p, [0.005, 0.02, 0.08])
    for b in np.unique(bins):
        mine = bins == b
        expected = p[mine].mean()
        sd = np.sqrt(expected * (1 - expected) / mine.sum())
        assert abs(stopped[mine].mean() - expected) < 4 * sd + 0.1 * expected
    quality = truth.articles.quality[tx["article_id"]][rows]
    assert stopped[quality < -1.5].mean() > 10 * stopped[quality > 0].mean()


def test_community_shock_silences_peers(retail):
    _, t, truth = retail
    tx = t["transactions"]
    at = seconds(tx["t_dat"])
    community = truth.customers.community[tx["customer_id"]]
    shocked = np.flatnonzero(truth.communities.shock_s != P.NEVER)
    quiet = np.flatnonzero(truth.communities.shock_s == P.NEVER)
    later = 120 * 86_400
    still, control = [], []
    for k in shocked:
        s = truth.communities.shock_s[k]
        if s + later > P.SPAN_S:
            continue
        before = (at > s - 30 * 86_400) & (at <= s)
        after = at > s + later
        for group, out in ((np.isin(community, [k]), still), (np.isin(community, quiet), control)):
            active = np.unique(tx["customer_id"][group & before])
            if len(active):
                out.append(np.isin(active, tx["customer_id"][group & after]).mean())
    # hit members (0.8) stop within 120 days with probability 1 - exp(-120/60)
    expected = 1 - P.SHOCK_HIT * (1 - np.exp(-120 / P.SHOCK_DELAY_MEAN_DAYS))
    ratio = np.mean(still) / np.mean(control)
    assert 0.5 * expected < ratio < 2 * expected


def test_purchases_follow_community_taste(retail):
    _, t, truth = retail
    tx = t["transactions"]
    community = truth.customers.community[tx["customer_id"]]
    group = truth.articles.group[tx["article_id"]]
    n_groups = len(P.PRODUCT_GROUPS)
    counts = np.zeros((len(truth.communities.taste), n_groups))
    np.add.at(counts, (community, group), 1)
    big = counts.sum(axis=1) >= 500
    observed = counts[big] / counts[big].sum(axis=1, keepdims=True)
    overall = counts.sum(axis=0) / counts.sum()
    to_taste = np.abs(observed - truth.communities.taste[big]).sum(axis=1).mean()
    to_overall = np.abs(observed - overall).sum(axis=1).mean()
    assert big.sum() >= 5 and to_taste < 0.4 * to_overall


@pytest.mark.parametrize("config", ["retail_churn", "retail_fraud", "retail_recommendation"])
def test_config_tasks_have_labels(retail, config):
    folder, tables, _ = retail
    run = RunData.from_config(CONFIGS / f"{config}.yaml")
    source, task = run.source, run.task
    assert source == "synthetic_retail"
    db = rdl.connect(folder, schema=sr.SCHEMA_FILE)
    for split in ("train", "val", "test"):
        labels = task.table(db, split)["label"]
        if task.task_type == "binary":
            assert 0 < labels.sum() < len(labels)
        else:
            items = set(tables["articles"]["article_id"])
            assert len(labels) > 0 and all(set(v) <= items for v in labels)
    if config == "retail_fraud":
        assert task.hidden_columns == {"transactions": ["is_fraud"]}


def test_bundled_name_generates_once(capsys):
    from rdl.cli import main

    db = rdl.connect("synthetic_retail")
    assert abs(len(db["transactions"]) / sr.DEFAULT_TRANSACTIONS - 1) < 0.05
    assert db["fraud_reports"].foreign_keys == {
        "transaction_id": "transactions", "device_id": "devices", "merchant_id": "merchants"}
    stamp = (sr.path() / "transactions.parquet").stat().st_mtime_ns
    assert main(["inspect", "synthetic_retail"]) == 0
    assert (sr.path() / "transactions.parquet").stat().st_mtime_ns == stamp
    report = capsys.readouterr().out
    assert "primary key : customer_id" in report and "time column : t_dat" in report


@pytest.mark.parametrize("kwargs, match", [
    ({"transactions": 9_999}, "transactions=9,999 is too small"),
    ({"transactions": 2.5e4}, "transactions=25000.0 must be a whole number"),
    ({"format": "csv"}, "format='csv' is not supported"),
    ({"chunk_size": 0}, "chunk_size=0 is too small"),
    ({"seed": -1}, "seed=-1 is too small"),
])
def test_bad_input_is_refused(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sr.generate(tmp_path / "out", **{"transactions": 10_000, **kwargs})
    assert not (tmp_path / "out").exists()


def test_duckdb_needs_a_file_and_parquet_a_folder(tmp_path):
    (tmp_path / "file.parquet").write_text("")
    with pytest.raises(ValueError, match="is a folder; format='duckdb' writes a file"):
        sr.generate(tmp_path, 10_000, format="duckdb")
    with pytest.raises(ValueError, match="is a file; format='parquet' writes a folder"):
        sr.generate(tmp_path / "file.parquet", 10_000)


@pytest.mark.parametrize("text, value", [
    ("10k", 10_000), ("1M", 1_000_000), ("1.5m", 1_500_000), ("100M", 100_000_000),
    ("2G", 2_000_000_000), ("200_000", 200_000), ("12345", 12_345),
])
def test_parse_count(text, value):
    assert sr.parse_count(text) == value


@pytest.mark.parametrize("text", ["ten", "1.5", "10x", "-5k", ""])
def test_parse_count_rejects(text):
    with pytest.raises(ValueError, match="is not"):
        sr.parse_count(text)


def test_command_line_prints_rows_per_table(tmp_path, capsys):
    assert sr.main(["--transactions", "10k", "--out", str(tmp_path / "cli"), "--seed", "4"]) == 0
    printed = dict(line.split()[:2] for line in capsys.readouterr().out.splitlines()[:len(TABLES)])
    for name in TABLES:
        rows = pq.ParquetFile(tmp_path / "cli" / f"{name}.parquet").metadata.num_rows
        assert printed[name] == f"{rows:,}"
