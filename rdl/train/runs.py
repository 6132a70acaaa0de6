"""Run folders: one run is one folder, ``<root>/version_N``, holding its
``config.yaml``, ``checkpoints/``, ``metrics.csv`` and TensorBoard events.

``rdl fit`` starts a new folder under ``trainer.default_root_dir``; a command
given a checkpoint inside a run folder (``--ckpt_path
runs/version_3/checkpoints/best.ckpt``) resumes, tests or predicts into that
same folder, so that everything about a model stays in one place.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import torch
import yaml
from lightning.fabric.loggers.logger import rank_zero_experiment
from lightning.pytorch.loggers import CSVLogger, Logger, TensorBoardLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter

PREFIX = "version_"
CONFIG = "config.yaml"
CHECKPOINTS = "checkpoints"


class RunError(Exception):
    """A run asked for on the command line does not exist (one line for the user)."""


def run_folders(root: Path) -> list[Path]:
    """The run folders under ``root``, in the order they were started."""
    found = [p for p in root.glob(PREFIX + "*")
             if p.is_dir() and p.name.removeprefix(PREFIX).isdigit()]
    return sorted(found, key=_number)


def new_run_folder(root: Path, claim: bool = True) -> Path:
    """The (absolute) folder of a new run under ``root``, made here with
    ``claim``, so that fits started together (a sweep) never share one.

    Only the first process of a DDP run claims one: the others name the next
    free folder without making it, and never write to it (loggers and
    checkpoints write from the first process, into its folder)."""
    root = root.resolve()
    existing = run_folders(root)
    number = _number(existing[-1]) + 1 if existing else 0
    while claim:
        try:
            (root / f"{PREFIX}{number}").mkdir(parents=True)
            break
        except FileExistsError:
            number += 1
    return root / f"{PREFIX}{number}"


def run_of_checkpoint(checkpoint: Path) -> Path | None:
    """The run folder ``checkpoint`` lies in (``<run>/checkpoints/x.ckpt``, next
    to the run's ``config.yaml``), or :obj:`None` for a checkpoint elsewhere."""
    folder = checkpoint.resolve().parent
    if folder.name == CHECKPOINTS and (folder.parent / CONFIG).is_file():
        return folder.parent
    return None


def latest_checkpoint(root: Path, name: str, task: dict) -> Path:
    """``<run>/checkpoints/<name>.ckpt`` of the run of ``task`` (the ``task:``
    section of its ``config.yaml``) under ``root`` whose file was written last:
    ``--ckpt_path last`` resumes the run trained most recently, not one of
    another task sharing the folder. Raises :class:`RunError` if there is none."""
    found, other_tasks = [], []
    for run in run_folders(root):
        checkpoint = run / CHECKPOINTS / f"{name}.ckpt"
        if checkpoint.is_file():
            (found if _task_of(run) == task else other_tasks).append(checkpoint)
    if not found:
        others = " (runs of other tasks there do not count)" if other_tasks else ""
        raise RunError(f"--ckpt_path {name}: no run of this task under {root} has a "
                       f"{CHECKPOINTS}/{name}.ckpt{others}; train one with rdl fit, or give "
                       "the checkpoint's path")
    return max(found, key=lambda p: (p.stat().st_mtime, _number(p.parent.parent)))


def run_loggers(run: Path, resume_step: int | None = None) -> list[Logger]:
    """CSV (``metrics.csv``, added to if it exists) and TensorBoard logs, both
    straight into ``run``; Lightning puts checkpoints in ``run/checkpoints``.
    A fit resumed from a checkpoint at optimizer step ``resume_step`` drops
    the CSV rows of that step on, which it logs again."""
    return [AppendingCSVLogger(run.parent, name="", version=run.name, resume_step=resume_step),
            TensorBoardLogger(run.parent, name="", version=run.name)]


def checkpoint_step(checkpoint: Path) -> int:
    """The optimizer steps taken when ``checkpoint`` was written."""
    return torch.load(checkpoint, map_location="cpu", weights_only=True, mmap=True)["global_step"]


class AppendingCSVLogger(CSVLogger):
    """A CSVLogger that adds its rows to an existing ``metrics.csv`` (Lightning's
    deletes it), so that ``rdl test`` and a resumed ``rdl fit`` keep the rows of
    the run they write into. With ``resume_step``, the rows of steps from
    ``resume_step`` on (those a killed fit wrote after its checkpoint) go."""

    def __init__(self, *args: Any, resume_step: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resume_step = resume_step

    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _AppendingWriter(self.log_dir, self.resume_step)
        return self._experiment


class _AppendingWriter(ExperimentWriter):
    def __init__(self, log_dir: str, resume_step: int | None) -> None:
        self.resume_step = resume_step
        super().__init__(log_dir)

    def _check_log_dir_exists(self) -> None:
        # Lightning's deletes metrics.csv; knowing its columns, save() appends
        # to it (and rewrites it once when new columns come).
        if not self._fs.isfile(self.metrics_file_path):
            return
        with self._fs.open(self.metrics_file_path, "r", newline="") as file:
            reader = csv.DictReader(file)
            rows = list(reader)
            self.metrics_keys = list(reader.fieldnames or [])
        kept = [row for row in rows if self.resume_step is None
                or not row.get("step") or int(float(row["step"])) < self.resume_step]
        if len(kept) < len(rows):
            with self._fs.open(self.metrics_file_path, "w", newline="") as file:
                writer = csv.DictWriter(file, fieldnames=self.metrics_keys)
                writer.writeheader()
                writer.writerows(kept)


def _number(run: Path) -> int:
    return int(run.name.removeprefix(PREFIX))


def _task_of(run: Path) -> dict | None:
    try:
        return (yaml.safe_load((run / CONFIG).read_text()) or {}).get("task")
    except (OSError, yaml.YAMLError):
        return None
