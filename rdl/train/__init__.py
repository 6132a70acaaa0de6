"""Stage 6 of rdl: Lightning training, driven by ``rdl fit --config ...``."""
from rdl.train.data import LabeledBatch, RelationalDataModule
from rdl.train.info import TaskInfo
from rdl.train.module import RelationalTask

__all__ = ["LabeledBatch", "RelationalDataModule", "RelationalTask", "TaskInfo"]
