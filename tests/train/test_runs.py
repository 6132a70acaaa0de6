"""Run folders: ``rdl fit`` writes one folder under ``trainer.default_root_dir``,
ends with a summary, and ``rdl test``/``predict`` with one of its checkpoints
write into that same folder."""
from __future__ import annotations

import os
import shlex

import pandas as pd
import pytest
import yaml

from rdl.testing.cli import CONFIGS, QUICK, rdl
from rdl.train.runs import (AppendingCSVLogger, RunError, latest_checkpoint, new_run_folder,
                            run_of_checkpoint)

CONFIG = ["--config", str(CONFIGS / "flights_to_ord.yaml"), *QUICK]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A two-epoch fit into ``out/runs``, and what it printed."""
    cwd = tmp_path_factory.mktemp("cwd")
    done = rdl("fit", *CONFIG, "--trainer.max_epochs", "2", "--trainer.default_root_dir",
               "out/runs", cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return cwd, done.stdout


def summary(stdout: str) -> dict[str, str]:
    lines = stdout[stdout.index("Run folder:"):].splitlines()
    assert len(lines) <= 8
    return dict(line.split(":", 1) for line in lines if ":" in line)


def test_default_root_dir_holds_the_whole_run(fitted):
    cwd, _ = fitted
    run = cwd / "out/runs/version_0"
    assert [p.name for p in (cwd / "out/runs").iterdir()] == ["version_0"]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]
    assert (run / "config.yaml").is_file() and (run / "metrics.csv").is_file()
    assert list(run.glob("events.out.tfevents.*"))  # TensorBoard, in the same folder
    assert not (cwd / "runs").exists()
    assert yaml.safe_load((run / "config.yaml").read_text())["ckpt_path"] is None


def test_fit_summary_names_the_best_checkpoint_and_a_predict_command_that_works(fitted):
    cwd, stdout = fitted
    lines = summary(stdout)
    assert lines["Run folder"].strip() == "out/runs/version_0"
    best = lines["Best checkpoint"].strip()
    assert best == "out/runs/version_0/checkpoints/best.ckpt" and (cwd / best).is_file()
    (epoch_line,) = [key for key in lines if key.startswith("Best epoch")]
    assert lines[epoch_line].strip().startswith("val_auroc ")
    command = lines["Predict with"].strip()
    assert command == f"rdl predict --config out/runs/version_0/config.yaml --ckpt_path {best}"
    out = cwd / "predictions.parquet"
    done = rdl(*shlex.split(command)[1:], "--prediction_writer.output", str(out), cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(pd.read_parquet(out)) == 1500
    assert "rdl predict: run folder out/runs/version_0" in done.stdout


def test_test_writes_into_the_run_folder_of_its_checkpoint(fitted):
    cwd, _ = fitted
    run = cwd / "out/runs/version_0"
    config = (run / "config.yaml").read_text()
    # no default_root_dir: the checkpoint's folder decides
    done = rdl("test", *CONFIG, "--ckpt_path", str(run / "checkpoints/best.ckpt"), cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rdl test: run folder out/runs/version_0" in done.stdout
    metrics = pd.read_csv(run / "metrics.csv")
    assert metrics["val_auroc"].notna().sum() == 2  # the fit's rows are kept
    assert metrics["test_auroc"].notna().sum() == 1
    assert (run / "config.yaml").read_text() == config  # the fit's settings, not the test's
    assert not (cwd / "runs").exists()
    assert [p.name for p in (cwd / "out/runs").iterdir()] == ["version_0"]


def test_ckpt_path_last_without_a_run_is_one_clear_error(tmp_path):
    done = rdl("fit", *CONFIG, "--ckpt_path", "last", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "error" in line]
    assert line.startswith("rdl fit: error: --ckpt_path last: no run of this task under runs")
    assert list(tmp_path.iterdir()) == []


# -- lookup, without training -------------------------------------------------
def make_run(root, number: int, task: str, checkpoints: dict[str, float] | None = None):
    """``root/version_<number>`` with a config of ``task`` and checkpoints
    named by their modification times."""
    run = root / f"version_{number}"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"task": {"query": task}}))
    for name, mtime in (checkpoints or {}).items():
        path = run / "checkpoints" / f"{name}.ckpt"
        path.write_bytes(b"")
        os.utime(path, (mtime, mtime))
    return run


def test_new_run_folders_count_on_from_the_highest_and_are_claimed(tmp_path):
    assert new_run_folder(tmp_path / "none", claim=False) == (tmp_path / "none/version_0").resolve()
    assert not (tmp_path / "none").exists()
    make_run(tmp_path, 3, "a")
    make_run(tmp_path, 10, "a")
    (tmp_path / "version_x").mkdir()
    (tmp_path / "version_12").write_text("")  # a file, not a run
    first, second = new_run_folder(tmp_path), new_run_folder(tmp_path)
    assert (first.name, second.name) == ("version_11", "version_13")  # a sweep's fits
    assert first.is_dir() and second.is_dir()


def test_only_checkpoints_of_a_run_folder_have_a_run(tmp_path):
    run = make_run(tmp_path, 0, "a", {"best": 1})
    assert run_of_checkpoint(run / "checkpoints/best.ckpt") == run.resolve()
    (tmp_path / "loose").mkdir()
    assert run_of_checkpoint(tmp_path / "loose/best.ckpt") is None
    (run / "config.yaml").unlink()
    assert run_of_checkpoint(run / "checkpoints/best.ckpt") is None


def test_latest_checkpoint_is_the_one_of_the_task_written_last(tmp_path):
    make_run(tmp_path, 0, "a", {"last": 300})  # resumed after version_1 was trained
    make_run(tmp_path, 1, "a", {"last": 200, "best": 200})
    make_run(tmp_path, 2, "b", {"last": 400})  # another task
    make_run(tmp_path, 3, "a")  # killed before its first checkpoint
    assert latest_checkpoint(tmp_path, "last", {"query": "a"}).parent.parent.name == "version_0"
    assert latest_checkpoint(tmp_path, "best", {"query": "a"}).parent.parent.name == "version_1"
    with pytest.raises(RunError, match=r"no run of this task .* \(runs of other tasks there"):
        latest_checkpoint(tmp_path, "best", {"query": "b"})


def test_csv_logger_appends_and_a_resumed_fit_replaces_rows_from_its_step(tmp_path):
    def log(rows, resume_step=None):
        logger = AppendingCSVLogger(tmp_path, name="", version="version_0",
                                    resume_step=resume_step)
        for step, values in rows:
            logger.log_metrics(values, step=step)
        logger.save()

    log([(9, {"train_loss": 0.5}), (19, {"train_loss": 0.4}), (19, {"val_auroc": 0.7})])
    log([(0, {"test_auroc": 0.75})])  # rdl test: a new column, the rows kept
    log([(29, {"train_loss": 0.3})])  # a fit killed after its checkpoint at step 20
    log([(29, {"train_loss": 0.2})], resume_step=20)  # resumed from it
    metrics = pd.read_csv(tmp_path / "version_0/metrics.csv")
    assert metrics["step"].tolist() == [9, 19, 19, 0, 29]
    assert metrics["train_loss"].tolist()[-1] == 0.2
    assert metrics["test_auroc"].notna().sum() == 1 and metrics["val_auroc"].notna().sum() == 1
