"""Pictures of a run: each figure has the axes it promises, and RunPlots
writes learning curves when fit ends and the test pictures of the task type
when test ends, into the run folder."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from lightning.pytorch.loggers import CSVLogger
from matplotlib.image import imread

import rdl
from rdl.tasks import Task
from rdl.testing.planted import fit_planted, planted_task
from rdl.testing.views import VIEWS_TASK, make_views
from rdl.train import plots
from rdl.train.plots import RunPlots


def assert_picture(path: Path) -> None:
    """A PNG of a real size that is not one flat colour."""
    assert path.is_file() and path.stat().st_size > 5_000
    pixels = imread(path)
    assert pixels.shape[0] > 200 and pixels.shape[1] > 200
    assert pixels.reshape(-1, pixels.shape[-1]).std(0).max() > 0.05


def labels(figure) -> list[tuple[str, str]]:
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in figure.axes]


def test_learning_curves_have_a_loss_panel_and_one_per_validation_metric(tmp_path):
    rows = [{"epoch": e, "step": 10 * e + s, "train_loss": 1.0 / (e + 1) + 0.01 * s}
            for e in range(3) for s in range(3)]
    rows += [{"epoch": e, "step": 10 * e + 9, "val_loss": 1.2 / (e + 1), "val_auroc": 0.6 + 0.1 * e,
              "val_f1": 0.5} for e in range(3)]
    rows += [{"epoch": 2, "step": 30, "test_auroc": 0.9}]  # rdl test adds to the same file
    pd.DataFrame(rows).to_csv(tmp_path / "metrics.csv", index=False)
    figure = plots.learning_curves(tmp_path / "metrics.csv")
    assert labels(figure) == [("epoch", "loss"), ("epoch", "auroc"), ("epoch", "f1")]
    train, val = figure.axes[0].get_lines()
    assert train.get_xdata().tolist() == [0, 1, 2]
    np.testing.assert_allclose(train.get_ydata(), [1.01, 0.51, 1 / 3 + 0.01])  # mean per epoch
    np.testing.assert_allclose(figure.axes[1].get_lines()[0].get_ydata(), [0.6, 0.7, 0.8])
    assert_picture(plots.save_figure(figure, tmp_path / "curves.png"))


def test_roc_and_precision_recall_curves():
    rng = np.random.default_rng(0)
    label = rng.random(500) < 0.3
    figure = plots.roc_pr_curves(np.clip(label * 0.3 + rng.random(500) * 0.7, 0, 1), label)
    assert labels(figure) == [("false positive rate", "true positive rate"),
                              ("recall", "precision")]
    assert "AUROC" in figure.axes[0].get_legend().get_texts()[0].get_text()
    with pytest.raises(ValueError, match="labels of both classes"):
        plots.roc_pr_curves(np.ones(5) * 0.5, np.zeros(5))


def test_predicted_vs_true_draws_at_most_max_points(monkeypatch):
    monkeypatch.setattr(plots, "MAX_POINTS", 100)
    target = np.arange(1000.0)
    figure = plots.predicted_vs_true(target + 1, target)
    assert labels(figure) == [("true", "predicted")]
    assert len(figure.axes[0].collections[0].get_offsets()) == 100
    assert figure.axes[0].get_title() == "MAE 1, R² 1.000"


def test_hit_rate_by_rank_counts_the_first_correct_item():
    top = torch.tensor([[3, 1, 2], [5, 6, -1], [7, 8, 9], [1, 2, 3]])
    positives = torch.tensor([[1, -1], [6, 5], [4, -1], [-1, -1]])  # the last has none
    first = plots.first_hit_rank(top, positives)
    assert first.tolist() == [2, 1, 4]
    figure = plots.hit_rate_by_rank(first, 3)
    assert labels(figure) == [("rank r", "hit rate within the top r")]
    np.testing.assert_allclose(figure.axes[0].get_lines()[0].get_ydata(), [1 / 3, 2 / 3, 2 / 3])


@pytest.mark.parametrize("regression, picture", [(False, "test_roc_pr.png"),
                                                 (True, "test_predicted_vs_true.png")])
def test_fit_and_test_write_their_pictures_into_the_run_folder(tmp_path, regression, picture):
    logger = CSVLogger(tmp_path, name="runs")
    trainer, module, datamodule = fit_planted(tmp_path, planted_task(regression=regression),
                                              max_epochs=2, callbacks=[RunPlots()], logger=logger)
    run = Path(logger.log_dir)
    assert_picture(run / plots.LEARNING_CURVES)
    trainer.test(module, datamodule, verbose=False)
    assert_picture(run / picture)
    assert sorted(p.name for p in run.glob("*.png")) == sorted([plots.LEARNING_CURVES, picture])


def test_recommendation_test_writes_the_hit_rate_by_rank(tmp_path):
    import lightning as L

    from rdl.train import RelationalDataModule, RelationalTask

    make_views().save(tmp_path / "views")
    datamodule = RelationalDataModule(str(tmp_path / "views"), Task(**VIEWS_TASK),
                                      num_neighbors=[4, 2], batch_size=16,
                                      cache_dir=str(tmp_path / "cache"))
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                        callbacks=[RunPlots(str(tmp_path / "run"))], enable_progress_bar=False,
                        enable_model_summary=False)
    module = RelationalTask(net={"channels": 8})
    trainer.fit(module, datamodule)
    assert not (tmp_path / "run").exists()  # no CSV logger: no learning curves
    trainer.test(module, datamodule, verbose=False)
    assert_picture(tmp_path / "run" / "test_hit_rate.png")


def test_predictor_evaluate_writes_the_pictures_of_a_split(tmp_path):
    fit_planted(tmp_path, planted_task(), max_epochs=1)
    predictor = rdl.Predictor.from_checkpoint(tmp_path / "checkpoints" / "last.ckpt")
    metrics = predictor.evaluate("val", plots=tmp_path / "pictures")
    assert metrics["auroc"] > 0.9
    assert_picture(tmp_path / "pictures" / "test_roc_pr.png")
