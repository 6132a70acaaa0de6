"""Checkpoint integrity: every checkpoint rdl writes carries a checksum of its
weights, checked wherever one is loaded, so bytes flipped on disk are a
one-line error naming the file instead of NaN predictions; and a checkpoint
file is replaced only by a complete one, so a full disk cannot leave half of
``last.ckpt`` behind."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from lightning.fabric.plugins import TorchCheckpointIO

from rdl.checksum import digest
from rdl.graph.cache_file import save_atomically

CHECKSUM_KEY = "rdl_state_dict_checksum"
# a fit with an average of the weights (rdl.train.weight_average) also keeps
# the weights it trains with, to resume from
CURRENT_KEY, CURRENT_CHECKSUM_KEY = "current_model_state", "rdl_current_state_checksum"


class CheckpointError(ValueError):
    """A checkpoint rdl cannot use (not written by rdl, or corrupt), in one line
    that starts with the file."""


def add_checksum(checkpoint: dict[str, Any]) -> None:
    """Stores the checksum of ``checkpoint["state_dict"]`` (and of the
    training weights, where kept apart) in ``checkpoint``."""
    checkpoint[CHECKSUM_KEY] = digest(checkpoint["state_dict"])
    if CURRENT_KEY in checkpoint:
        checkpoint[CURRENT_CHECKSUM_KEY] = digest(checkpoint[CURRENT_KEY])


def verify_checksum(checkpoint: dict[str, Any], path: str | Path | None = None) -> None:
    """Raises :class:`CheckpointError` if ``checkpoint``'s weights differ from
    the checksum stored with them. Checkpoints written before rdl stored one
    pass unchecked. ``path`` names the file in the error (Lightning's hooks
    do not always know it)."""
    for weights, key in (("state_dict", CHECKSUM_KEY), (CURRENT_KEY, CURRENT_CHECKSUM_KEY)):
        stored = checkpoint.get(key)
        if stored is not None and stored != digest(checkpoint[weights]):
            raise CheckpointError(f"{path or 'The checkpoint'} is corrupt: its weights do not "
                                  "match the checksum written with them; use another checkpoint "
                                  "or retrain")


def checked_weights(checkpoint: dict[str, Any], path: str | Path | None = None) -> dict:
    """``checkpoint``'s weights after :func:`verify_checksum`, without the
    second copy that rdl stored under ``run_model.`` before 2026-12 (the
    model registered twice; the compiled one under other names)."""
    verify_checksum(checkpoint, path)
    return {key: value for key, value in checkpoint["state_dict"].items()
            if not key.startswith("run_model.")}


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint writer, writing local files as rdl's caches are
    written (:func:`~rdl.graph.cache_file.save_atomically`): a temporary file
    next to the checkpoint, renamed over it once complete. Lightning's own
    goes through the system's temporary folder, which is only atomic when it
    lies on the checkpoint's file system. A failed write (a full disk) is an
    ``OSError`` naming the file, and the checkpoint there before is kept."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        if storage_options is not None or "://" in str(path):  # remote: Lightning's way
            return super().save_checkpoint(checkpoint, path, storage_options)
        save_atomically(checkpoint, path)
