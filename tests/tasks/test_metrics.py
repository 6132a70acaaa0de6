"""Metrics against scikit-learn and hand computations; torch stays out of ``import rdl.tasks``."""
from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sk = pytest.importorskip("sklearn.metrics")

from rdl.tasks import Task, TaskError  # noqa: E402
from rdl.tasks.metrics import RankingMetric, get_metric, get_metrics, metrics_for  # noqa: E402
from rdl.testing.shops import TEST, VAL  # noqa: E402

RNG = np.random.default_rng(0)


def value(metric, preds, target) -> float:
    metric.update(preds, target)
    return float(metric.compute())


def test_binary_metrics_match_sklearn():
    target = RNG.integers(0, 2, 200)
    probs = np.clip(target * 0.3 + RNG.random(200) * 0.7, 0, 1)
    p, t = torch.tensor(probs, dtype=torch.float32), torch.tensor(target)
    m = get_metrics(["auroc", "average_precision", "accuracy", "f1"], "binary")
    assert value(m["auroc"], p, t) == pytest.approx(sk.roc_auc_score(target, probs), abs=1e-5)
    assert value(m["average_precision"], p, t) == pytest.approx(
        sk.average_precision_score(target, probs), abs=1e-5)
    hard = (probs > 0.5).astype(int)
    assert value(m["accuracy"], p, t) == pytest.approx(sk.accuracy_score(target, hard))
    assert value(m["f1"], p, t) == pytest.approx(sk.f1_score(target, hard))


def test_regression_metrics_match_sklearn():
    y, yhat = RNG.normal(size=100), RNG.normal(size=100)
    p, t = torch.tensor(yhat), torch.tensor(y)
    assert value(get_metric("mae", "regression"), p, t) == pytest.approx(
        sk.mean_absolute_error(y, yhat))
    assert value(get_metric("rmse", "regression"), p, t) == pytest.approx(
        math.sqrt(sk.mean_squared_error(y, yhat)))
    assert value(get_metric("r2", "regression"), p, t) == pytest.approx(sk.r2_score(y, yhat))


def test_multiclass_metrics_match_sklearn():
    y = RNG.integers(0, 4, 150)
    scores = RNG.random((150, 4))
    scores[np.arange(150), y] += RNG.random(150)
    hard = scores.argmax(1)
    p, t = torch.tensor(scores), torch.tensor(y)
    acc = get_metric("accuracy", "multiclass", num_classes=4)
    f1 = get_metric("f1", "multiclass", num_classes=4)
    assert value(acc, p, t) == pytest.approx(sk.accuracy_score(y, hard))
    assert value(f1, p, t) == pytest.approx(sk.f1_score(y, hard, average="macro"))


def test_ranking_metrics_by_hand():
    # Row 1: truth {2, 9}; predicted [1, 2, 3] hits at rank 2.
    # Row 2: truth {7}; predicted [7, 5, 6] hits at rank 1.
    # Row 3: no true items: skipped.
    preds = torch.tensor([[1, 2, 3], [7, 5, 6], [1, 2, 3]])
    target = [[2, 9], [7], []]
    want = {
        "precision": (1 / 3 + 1 / 3) / 2,
        "recall": (1 / 2 + 1) / 2,
        "map": ((1 / 2) / 2 + 1.0) / 2,
        "ndcg": ((1 / math.log2(3)) / (1 + 1 / math.log2(3)) + 1.0) / 2,
    }
    for name, expected in want.items():
        assert value(get_metric(f"{name}@3", "recommendation"), preds, target) == pytest.approx(
            expected)


def test_ranking_metrics_accumulate_and_take_k_from_task():
    m = get_metric("recall", "recommendation", k=1)
    m.update(torch.tensor([[4, 1]]), torch.tensor([[1, 4, -1]]))
    m.update(torch.tensor([[3, 1]]), [[3]])
    assert float(m.compute()) == pytest.approx((1 / 2 + 1) / 2)
    assert repr(m) == "RankingMetric(recall@1)"


def test_ndcg_matches_sklearn():
    n_items, k = 8, 5
    truth = [RNG.choice(n_items, size=RNG.integers(1, 4), replace=False) for _ in range(20)]
    scores = RNG.random((20, n_items))
    ranked = torch.tensor(np.argsort(-scores, axis=1))
    relevance = np.zeros((20, n_items))
    for i, items in enumerate(truth):
        relevance[i, items] = 1
    got = value(get_metric(f"ndcg@{k}", "recommendation"), ranked, [list(x) for x in truth])
    assert got == pytest.approx(sk.ndcg_score(relevance, scores, k=k))


@pytest.mark.parametrize("name, task_type, message", [
    ("mse", "regression", "Unknown metric 'mse' for a regression task; valid metrics are "
     "['mae', 'rmse', 'r2']"),
    ("hit@5", "recommendation", "valid metrics are ['map@k', 'precision@k', 'recall@k', 'ndcg@k']"),
    ("auroc@5", "binary", "Metric 'auroc@5': only ranking metrics take '@k'; use 'auroc'"),
    ("map@x", "recommendation", "Metric 'map@x': k in '@k' must be a positive whole number"),
    ("map", "recommendation", "Metric 'map' needs a cut-off: write 'map@k'"),
    ("auroc", "ranking", "task_type='ranking' is not a task type"),
    ("f1", "multiclass", "Metric 'f1' needs num_classes >= 2, got None"),
])
def test_bad_metric_names(name, task_type, message):
    with pytest.raises(TaskError, match=re.escape(message)):
        get_metric(name, task_type)


def test_ranking_shape_error():
    with pytest.raises(TaskError, match=re.escape("preds must be item indices of shape [N, >= 3]")):
        RankingMetric("map", 3).update(torch.tensor([[1, 2]]), [[1]])


def test_metrics_for_task(shop):
    t = Task(query="PREDICT orders.channel FOR EACH orders.order_id", val_timestamp=VAL,
             test_timestamp=TEST)
    m = metrics_for(t, shop)
    assert list(m) == ["accuracy", "f1"] and m["f1"].num_classes == 3
    t = Task(query="PREDICT LIST_DISTINCT(orders.product_id, 0, 7, days) RANK TOP 4 "
                   "FOR EACH customers.customer_id", metrics=["map", "ndcg@2"],
             val_timestamp=VAL, test_timestamp=TEST)
    assert [repr(x) for x in metrics_for(t).values()] == ["RankingMetric(map@4)",
                                                          "RankingMetric(ndcg@2)"]


def test_import_rdl_tasks_does_not_import_torch():
    code = ("import sys, rdl.tasks, rdl.tasks.cli; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
    import rdl.tasks

    assert rdl.tasks.get_metrics is get_metrics  # loaded lazily on first use
