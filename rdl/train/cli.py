"""``rdl fit|validate|test|predict --config ...``: LightningCLI over rdl's
data module and model, with the task as its own top-level ``task:`` section."""
from __future__ import annotations

import sys

from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from rdl.tasks import Task
from rdl.train.callbacks import PredictionWriter, TaskCheckpoint, TaskEarlyStopping
from rdl.train.data import RelationalDataModule
from rdl.train.module import RelationalTask

SUBCOMMANDS = ("fit", "validate", "test", "predict")


class RelationalCLI(LightningCLI):
    """Adds ``task:`` (linked into the data module), a checkpoint on the task's
    metric, early stopping, CSV + TensorBoard logs and a prediction writer, and
    clips the gradient norm to 1."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_class_arguments(Task, "task", fail_untyped=False)
        parser.link_arguments("task", "data.task", apply_on="instantiate")
        parser.add_lightning_class_args(TaskCheckpoint, "checkpoint")
        parser.add_lightning_class_args(TaskEarlyStopping, "early_stopping")
        parser.add_lightning_class_args(PredictionWriter, "prediction_writer")
        parser.set_defaults({
            "trainer.max_epochs": 10,
            "trainer.gradient_clip_val": 1.0,  # one bad batch must not undo the training so far
            "trainer.log_every_n_steps": 10,
            "trainer.default_root_dir": "runs",
            "trainer.logger": [
                {"class_path": "lightning.pytorch.loggers.CSVLogger",
                 "init_args": {"save_dir": "runs", "name": "csv"}},
                {"class_path": "lightning.pytorch.loggers.TensorBoardLogger",
                 "init_args": {"save_dir": "runs", "name": "tensorboard"}},
            ],
        })


def main(argv: list[str]) -> int:
    """Runs one LightningCLI subcommand (``argv[0]`` is fit/validate/test/predict)."""
    RelationalCLI(  # args=None reads the command line (no warning that both were given)
        RelationalTask, RelationalDataModule, args=None if argv == sys.argv[1:] else argv,
        seed_everything_default=0,
        save_config_kwargs={"overwrite": True}, parser_kwargs={"prog": "rdl"},
    )
    return 0
