"""Silences third-party messages that show on every run and ask nothing of
the user, so that rdl's own warnings stand out. Each is matched by its text:
every other warning, rdl's included, still shows."""
from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

# (message regex, category) of warnings that do not concern rdl's users
WARNINGS = (
    # torch deprecates LeafSpec, which Lightning's own _pytree helper still uses
    (r"`isinstance\(treespec, LeafSpec\)` is deprecated", FutureWarning),
    # rdl adds its checkpoint, early stopping and writer callbacks on every run
    (r"Be aware that when using `ckpt_path`, callbacks used to create the checkpoint",
     UserWarning),
)

# Lightning's advertisements for its cloud services ("💡 Tip: ... try installing litlogger")
TIP = "💡 Tip:"

# the loggers Lightning's rank_zero_info writes to, whichever package is loaded last
LIGHTNING_LOGGERS = (
    "lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero",
    "pytorch_lightning.utilities.rank_zero", "lightning_fabric.utilities.rank_zero",
)


def _not_a_tip(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(TIP)


def silence_third_party_noise() -> None:
    """Installs the warning filters and the log filter above (once, however
    often it is called)."""
    for message, category in WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
    for name in LIGHTNING_LOGGERS:
        logger = logging.getLogger(name)
        if _not_a_tip not in logger.filters:
            logger.addFilter(_not_a_tip)


@contextmanager
def lightning_info_muted() -> Iterator[None]:
    """Keeps Lightning's info lines ("GPU available: ...") out of one call
    from a notebook, where the user asked for a result, not a run log; its
    warnings still show. Installs :func:`silence_third_party_noise` too."""
    silence_third_party_noise()
    loggers = [logging.getLogger(name) for name in LIGHTNING_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
