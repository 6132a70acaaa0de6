"""Predictor.explain: occlusion effects over the subgraph the model saw. On a
shop whose label is planted in one column of one child table, that table and
that column come first, whichever of two tables holds the signal."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import rdl
from rdl.predict import plot_explanation
from rdl.testing.planted import PLANTED, fit_planted, planted_task

AT = "2022-08-15"
CUSTOMERS = [f"c{i}" for i in range(6)]  # big and small spenders both (checked below)


@pytest.fixture(scope="module", params=sorted(PLANTED))
def planted(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"planted_{request.param}")
    fit_planted(folder, planted_task(request.param), request.param)
    return request.param, rdl.Predictor.from_checkpoint(folder / "checkpoints" / "last.ckpt")


@pytest.fixture(scope="module")
def explanations(planted):
    _, predictor = planted
    return {customer: predictor.explain(customer, AT) for customer in CUSTOMERS}


def test_the_planted_table_and_column_move_the_prediction_most(planted, explanations):
    signal, _ = planted
    signs = set()
    for frame in explanations.values():
        tables = frame[frame["level"] == "table"]
        columns = frame[frame["level"] == "column"]
        assert tables["table"].iloc[0] == signal
        assert tuple(columns[["table", "column"]].iloc[0]) == (signal, PLANTED[signal])
        effects = tables["effect"].abs().to_numpy()
        assert effects[0] > 5 * effects[1]  # not first by a hair
        # the planted column accounts for (more than) the prediction's side of zero
        assert np.sign(columns["effect"].iloc[0]) == np.sign(frame.attrs["output"])
        signs.add(np.sign(frame.attrs["output"]))
    assert signs == {-1.0, 1.0}


def test_the_frame_is_tidy_and_names_rows_by_their_keys(planted, explanations):
    signal, predictor = planted
    frame = explanations["c0"]
    assert list(frame.columns) == ["level", "table", "column", "row", "days_before", "effect"]
    assert frame["level"].drop_duplicates().tolist() == ["table", "column", "row"]
    for _, part in frame.groupby("level", sort=False):
        assert part["effect"].abs().is_monotonic_decreasing
    assert sorted(frame.loc[frame["level"] == "table", "table"]) == ["customers", "orders",
                                                                     "visits"]
    assert sorted(frame.loc[frame["level"] == "column", "column"]) == [
        "age", "amount", "channel", "region", "seconds"]
    rows = frame[frame["level"] == "row"]
    for table in ("orders", "visits"):
        keys = rows.loc[rows["table"] == table, "row"].tolist()
        assert keys and all(isinstance(key, int) for key in keys)
        owners = predictor.db[table].df.set_index(f"{table[:-1]}_id").loc[keys, "customer_id"]
        assert (owners == "c0").all()  # the customer's own rows
    assert (rows["days_before"] >= 0).all()  # nothing after `at` reached the model
    assert frame.attrs["explained"] == "logit"
    probability = predictor.predict(["c0"], AT)["prediction"].iloc[0]
    assert frame.attrs["output"] == pytest.approx(math.log(probability / (1 - probability)),
                                                  abs=1e-4)


def test_explanation_plot_shows_each_level(planted, explanations, tmp_path):
    _, predictor = planted
    frame = predictor.explain("c1", AT, plot=tmp_path / "why.png")
    pd.testing.assert_frame_equal(frame, explanations["c1"])  # 'last' sampling: deterministic
    assert (tmp_path / "why.png").stat().st_size > 5_000
    figure = plot_explanation(frame, top=3)
    assert [ax.get_title(loc="left") for ax in figure.axes] == ["tables", "columns", "rows"]
    assert [len(ax.patches) for ax in figure.axes] == [3, 3, 3]
    assert figure.axes[-1].get_xlabel() == "effect on the logit"


def test_regression_explains_the_value_in_the_labels_units(tmp_path):
    fit_planted(tmp_path, planted_task(regression=True), max_epochs=4)
    predictor = rdl.Predictor.from_checkpoint(tmp_path / "checkpoints" / "last.ckpt")
    frame = predictor.explain("c0", AT)
    assert frame.attrs["explained"] == "prediction"
    assert frame.attrs["output"] == pytest.approx(
        predictor.predict(["c0"], AT)["prediction"].iloc[0], rel=1e-4)
    assert tuple(frame[frame["level"] == "column"][["table", "column"]].iloc[0]) == (
        "orders", "amount")


def test_recommendation_explains_the_score_of_the_top_item(tmp_path):
    import lightning as L

    from rdl.tasks import Task
    from rdl.testing.views import VIEWS_TASK, make_views
    from rdl.train import RelationalDataModule, RelationalTask
    from rdl.train.callbacks import TaskCheckpoint

    make_views().save(tmp_path / "views")
    datamodule = RelationalDataModule(str(tmp_path / "views"), Task(**VIEWS_TASK),
                                      num_neighbors=[4, 2], batch_size=16,
                                      cache_dir=str(tmp_path / "cache"))
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path / "checkpoints"))
    L.Trainer(max_epochs=1, logger=False, callbacks=[checkpoint], enable_progress_bar=False,
              enable_model_summary=False).fit(RelationalTask(net={"channels": 8}), datamodule)
    predictor = rdl.Predictor.from_checkpoint(tmp_path / "checkpoints" / "last.ckpt")
    top = predictor.recommend(["u0"], "2022-03-25", k=2)["item"].tolist()
    assert predictor.explain("u0", "2022-03-25").attrs["explained"] == f"score of item {top[0]}"
    frame = predictor.explain("u0", "2022-03-25", item=top[1])
    assert frame.attrs["explained"] == f"score of item {top[1]}"
    assert set(frame.loc[frame["level"] == "table", "table"]) == {"users", "views", "items"}
    assert np.isfinite(frame["effect"]).all() and (frame["effect"] != 0).any()


def test_multiclass_explains_the_log_probability_of_the_predicted_class(tmp_path):
    from rdl.tasks import Task

    task = Task(query="PREDICT orders.channel FOR EACH orders.order_id",
                val_timestamp="2022-07-01", test_timestamp="2022-07-31")
    fit_planted(tmp_path, task, max_epochs=1)
    predictor = rdl.Predictor.from_checkpoint(tmp_path / "checkpoints" / "last.ckpt")
    order = predictor.db["orders"].df.iloc[-1]
    frame = predictor.explain(order["order_id"], order["at"])
    predicted = predictor.predict([order["order_id"]], order["at"]).iloc[0]
    assert frame.attrs["explained"] == f"log-probability of {predicted['prediction']!r}"
    assert frame.attrs["output"] == pytest.approx(math.log(predicted["probability"]), abs=1e-4)
    assert "channel" not in set(frame["column"])  # the hidden target is no feature


def test_a_blended_model_says_that_only_the_gnn_is_explained(planted, explanations, monkeypatch):
    from rdl.train.blend import BaselineBlend

    _, predictor = planted
    blend = BaselineBlend(booster="", gnn_share=0.3, task_type="binary", windows=(7.0,))
    monkeypatch.setattr(predictor.module, "blend", blend)
    with pytest.warns(UserWarning, match=r"GNN share 0.30\): the effects are the GNN's"):
        frame = predictor.explain("c2", AT)
    pd.testing.assert_frame_equal(frame, explanations["c2"])


def test_typical_values_of_every_stype_leave_the_batch_and_other_columns_alone():
    import torch
    from torch_frame.data.stats import StatType

    from rdl.nn import RelationalModel
    from rdl.predict.explain import _Typical
    from rdl.testing.graphs import sample_batches, synthetic_graph

    shop = synthetic_graph()
    model = RelationalModel(shop, seed_type="transactions", task_type="regression", channels=8,
                            temporal_stats=False)
    packed = model.pack(sample_batches(shop, "transactions", [16], [4, 4])[0])
    before = {nt: {k: v.clone() for k, v in f.items()} for nt, f in packed.features.items()}
    typical = _Typical(model.spec)
    stats = shop.col_stats_dict
    items = typical(packed, "items", ["price", "category", "tags", "launched"]).features["items"]
    assert (items["numerical"] == stats["items"]["price"][StatType.MEAN]).all()
    assert (items["categorical"] == 0).all()  # the most common category
    assert items["multicategorical"].numel() == 0  # no tags
    median = torch.as_tensor(stats["items"]["launched"][StatType.MEDIAN_TIME])
    assert (items["timestamp"] == median).all()
    customers = typical(packed, "customers", ["profile"]).features["customers"]
    assert (customers["embedding"] == 0).all()
    torch.testing.assert_close(customers["numerical"], before["customers"]["numerical"],
                               equal_nan=True)  # age untouched
    for nt, features in packed.features.items():  # the batch itself is unchanged
        for key, value in features.items():
            torch.testing.assert_close(value, before[nt][key], equal_nan=True)
    assert model(typical(packed, "items", ["tags"])).isfinite().all()
