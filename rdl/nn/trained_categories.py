"""Categories that no training batch held, read as missing outside training.

A category first held by rows after the training period (a new race's web
page, a new driver's name, a circuit first raced in the test years) keeps the
random embedding it was initialised with: read as it is, it would add noise of
the trained embeddings' size to every prediction that samples it. Modules with
an embedding table ``emb`` whose row 0 is the missing value's zero padding mark
each row a training forward pass reads in a ``trained`` buffer, saved with the
weights; outside training the rows never marked read as row 0, which training
knows.
"""
from __future__ import annotations

import torch
from torch import Tensor


class TrainedCategories:
    """Mixin for a :class:`torch.nn.Module` with an embedding table ``emb``
    (row 0: missing); call :meth:`init_trained` once ``emb`` exists and pass
    every embedding index through :meth:`trained_index`."""

    emb: torch.nn.Embedding
    trained: Tensor

    def init_trained(self) -> None:
        self.register_buffer(  # type: ignore[attr-defined]
            "trained", torch.zeros(self.emb.num_embeddings, dtype=torch.bool))

    def trained_index(self, index: Tensor) -> Tensor:
        """``index`` in training, marking its rows; otherwise ``index`` with
        the rows never marked replaced by 0."""
        if self.training:  # type: ignore[attr-defined]
            rows = index.flatten()
            # `rows >= 0` is all True; a constant True would be folded by Inductor
            # into a fill of a data-dependent size, which it cannot compile.
            self.trained.index_put_((rows,), rows >= 0)
            return index
        return torch.where(self.trained[index], index, 0)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        # A checkpoint written before ``trained`` existed read every category.
        state_dict.setdefault(prefix + "trained", torch.ones_like(self.trained))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)  # type: ignore[misc]


def share_trained_categories(model: torch.nn.Module) -> None:
    """Under DDP, gives every process the categories any process has trained.
    DDP copies process 0's buffers to the others before each forward pass, so
    without this, after every training step, the categories that only other
    processes' batches held would be forgotten."""
    for module in model.modules():
        if isinstance(module, TrainedCategories):
            marks = module.trained.to(torch.int32)
            torch.distributed.all_reduce(marks, op=torch.distributed.ReduceOp.MAX)
            module.trained.copy_(marks.bool())
