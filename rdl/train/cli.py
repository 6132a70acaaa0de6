"""``rdl fit|validate|test|predict --config ...``: LightningCLI over rdl's
data module and model, with the task as its own top-level ``task:`` section,
and one folder per run (:mod:`rdl.train.runs`)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import yaml
from lightning.fabric.plugins import CheckpointIO
from lightning.pytorch import Trainer
from lightning.pytorch.cli import ArgsType, LightningArgumentParser, LightningCLI
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.utilities.rank_zero import rank_zero_only

from rdl.tasks import Task
from rdl.train.callbacks import (PredictionWriter, ResumeInOrder, TaskCheckpoint,
                                 TaskEarlyStopping)
from rdl.train.checkpoint import AtomicCheckpointIO
from rdl.train.data import RelationalDataModule
from rdl.train.epoch_lines import EpochLines, draws_progress
from rdl.train.module import RelationalTask
from rdl.train.plain_help import PlainHelpFormatter
from rdl.train.plots import RunPlots
from rdl.train.runs import (CONFIG, checkpoint_step, latest_checkpoint, new_run_folder,
                            run_loggers, run_of_checkpoint)
from rdl.train.weight_average import WeightAverage

LATEST = ("last", "best")  # --ckpt_path values that name a file of the latest run


class RelationalCLI(LightningCLI):
    """Adds ``task:`` (linked into the data module), a checkpoint on the task's
    metric, early stopping, an average of the weights (``ema:``), a prediction
    writer and pictures of the run, and clips the gradient norm to 1.

    Each run writes into one folder, ``<trainer.default_root_dir>/version_N``:
    ``config.yaml``, ``checkpoints/``, ``metrics.csv`` and TensorBoard events
    (unless ``trainer.logger`` names other loggers). A command given a
    checkpoint of a run folder writes into that folder: ``fit`` resumes the
    run, ``validate``/``test`` add their metrics to its ``metrics.csv``.
    ``--ckpt_path last`` (or ``best``) is that file of the run of the same
    task whose file was written last.
    """

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_class_arguments(Task, "task", fail_untyped=False)
        parser.link_arguments("task", "data.task", apply_on="instantiate")
        parser.add_lightning_class_args(TaskCheckpoint, "checkpoint")
        parser.add_lightning_class_args(TaskEarlyStopping, "early_stopping")
        parser.add_lightning_class_args(WeightAverage, "ema")
        parser.add_lightning_class_args(PredictionWriter, "prediction_writer")
        parser.add_lightning_class_args(RunPlots, "plots")
        parser.set_defaults({
            "trainer.max_epochs": 10,
            "trainer.gradient_clip_val": 1.0,  # one bad batch must not undo the training so far
            "trainer.log_every_n_steps": 10,
            "trainer.default_root_dir": "runs",
        })

    def parse_arguments(self, parser: LightningArgumentParser, args: ArgsType) -> None:
        """Parses, then finds the checkpoint's run folder, resolving
        ``--ckpt_path last`` before LightningCLI reads the model settings from
        the checkpoint."""
        super().parse_arguments(parser, args)
        subcommand = self.config.get("subcommand")
        config = self.config[subcommand] if subcommand else self.config
        self.root = Path(config.trainer.default_root_dir or ".")
        ckpt = config.get("ckpt_path")
        if ckpt in LATEST:
            task = yaml.safe_load(self._parser(subcommand).dump(config, skip_unset=False))["task"]
            ckpt = config.ckpt_path = str(latest_checkpoint(self.root, ckpt, task))
        self.checkpoint = ckpt if ckpt and Path(ckpt).is_file() else None
        self.run_folder = run_of_checkpoint(Path(self.checkpoint)) if self.checkpoint else None
        self.logs_in_run = config.trainer.get("logger") in (None, True)  # not other loggers

    def _parse_ckpt_path(self) -> None:
        """LightningCLI puts a checkpoint's model settings over those of the
        config and the command line (a checkpoint predicts as it was
        trained); this says which set ones it replaced, instead of dropping
        them without a word."""
        subcommand = self.config.get("subcommand")
        if not subcommand:
            return super()._parse_ckpt_path()
        defaults = _flat(self._parser(subcommand).get_defaults().get("model"))
        given = {key: value for key, value in _flat(self.config[subcommand].get("model")).items()
                 if key in defaults and value != defaults[key]}
        super()._parse_ckpt_path()
        taken = _flat(self.config[subcommand].get("model"))
        replaced = [f"model.{key} {value!r} (the checkpoint's: {taken[key]!r})"
                    for key, value in sorted(given.items())
                    if key in taken and taken[key] != value]
        if replaced and rank_zero_only.rank == 0:
            print(f"rdl {subcommand}: the checkpoint's model settings are used, so these given "
                  f"ones are not: {'; '.join(replaced)}", file=sys.stderr, flush=True)

    def before_instantiate_classes(self) -> None:
        if self.subcommand != "fit" and self.run_folder and (self.run_folder / CONFIG).is_file():
            self.save_config_callback = None  # keep the config.yaml of the run's fit

    def instantiate_trainer(self, **kwargs: Any) -> Trainer:
        """The trainer, logging into the run folder (a new one, or the
        checkpoint's) unless ``trainer.logger`` says otherwise, and resuming
        where its checkpoint left off."""
        if self.logs_in_run:
            resume_step = None
            if self.run_folder is None:  # claimed only now that the settings proved good
                self.run_folder = new_run_folder(self.root, claim=rank_zero_only.rank == 0)
            elif self.subcommand == "fit":
                resume_step = checkpoint_step(Path(self.checkpoint))
            kwargs["logger"] = run_loggers(self.run_folder, resume_step)
        trainer_config = self._get(self.config_init, "trainer", default={})
        plugins = trainer_config.get("plugins") or []
        plugins = plugins if isinstance(plugins, list) else [plugins]
        if not any(isinstance(p, CheckpointIO) for p in plugins):  # unless the user chose one
            kwargs["plugins"] = [*plugins, AtomicCheckpointIO()]
        if trainer_config.get("enable_progress_bar") is None:
            kwargs["enable_progress_bar"] = draws_progress()  # a log file keeps every redraw
        trainer = super().instantiate_trainer(**kwargs)
        trainer.callbacks.append(ResumeInOrder())
        if trainer.progress_bar_callback is None:
            trainer.callbacks.append(EpochLines())
        return trainer

    def after_instantiate_classes(self) -> None:
        if self.subcommand == "fit":  # config.yaml: re-running it starts a new run
            self.config.fit.ckpt_path = None
        if self.subcommand is not None and self.trainer.is_global_zero:
            print(f"rdl {self.subcommand}: run folder {shown(log_dir(self.trainer))}", flush=True)
            if self.checkpoint is not None:
                verb = "resuming from" if self.subcommand == "fit" else "checkpoint"
                print(f"rdl {self.subcommand}: {verb} {shown(self.checkpoint)}", flush=True)

    def after_fit(self) -> None:
        if self.trainer.is_global_zero:
            print(fit_summary(self.trainer), flush=True)


def fit_summary(trainer: Trainer) -> str:
    """A few lines on what ``fit`` left: the run folder, the best epoch's
    validation metrics (and any test metrics), ``best.ckpt`` and the command
    to predict with it."""
    run = log_dir(trainer)
    checkpoint = trainer.checkpoint_callback
    lines = [_line("Run folder", shown(run))]
    best = getattr(checkpoint, "best_metrics", {})
    if best:
        monitor = checkpoint.monitor
        names = [monitor, *sorted(set(best) - {"epoch", "step", monitor},
                                  key=lambda k: (k == "val_loss", k))]  # the loss last
        label = (f"Best epoch {best['epoch']}" + (f", step {best['step']}" if "step" in best
                                                  else "") + f" by {monitor}")
        lines.append(_line(label, _metrics({k: best[k] for k in names})))
    test = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("test_")}
    if test:
        lines.append(_line("Test", _metrics(test)))
    if checkpoint is None or not checkpoint.best_model_path:
        lines.append("No validation ran, so there is no best checkpoint.")
    else:
        path = shown(checkpoint.best_model_path)
        lines += [_line("Best checkpoint", path), _line(
            "Predict with", f"rdl predict --config {shown(run / CONFIG)} --ckpt_path {path}")]
    return "\n".join(lines)


def log_dir(trainer: Trainer) -> Path:
    """``trainer.log_dir`` (where config.yaml goes) without its broadcast: a
    collective call, which would wait for the other processes of a DDP run."""
    logger = trainer.loggers[0] if trainer.loggers else None
    if isinstance(logger, (CSVLogger, TensorBoardLogger)):
        return Path(logger.log_dir)
    return Path(logger.save_dir if logger is not None else trainer.default_root_dir)


def _line(label: str, text: str) -> str:
    return f"{label + ':':<16} {text}"


def _metrics(values: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.4f}" for name, value in values.items())


def shown(path: str | os.PathLike) -> str:
    """``path`` relative to the working folder if it lies inside it, else absolute."""
    path = Path(path).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def main(argv: list[str]) -> int:
    """Runs one LightningCLI subcommand (``argv[0]`` is fit/validate/test/predict)."""
    RelationalCLI(  # args=None reads the command line (no warning that both were given)
        RelationalTask, RelationalDataModule, args=None if argv == sys.argv[1:] else argv,
        seed_everything_default=0, save_config_kwargs={"overwrite": True},
        parser_kwargs={"prog": "rdl", "formatter_class": PlainHelpFormatter},
    )
    return 0


def _flat(section: Any, prefix: str = "") -> dict[str, Any]:
    """A (nested) settings section as ``{"net.channels": 32, ...}``."""
    plain = section.as_dict() if hasattr(section, "as_dict") else section
    flat: dict[str, Any] = {}
    for key, value in (plain or {}).items() if isinstance(plain, dict) else ():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
