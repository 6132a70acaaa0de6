"""Cache files that are complete, verified, or absent.

A cache file is a ``torch.save`` of a dict sealed with a checksum of its
content (:func:`rdl.checksum.digest`). It is written to a temporary file
with a unique name next to it and renamed over it, so processes writing the
same cache at once each leave a complete file, readers (and memory maps of
the old file) never see a half-written one, and a failed write (a full disk)
leaves nothing behind. Reading checks the checksum, so bytes changed on disk
are found instead of used.
"""
from __future__ import annotations

import os
import time
import uuid
from glob import escape
from pathlib import Path
from typing import Any

import torch

from rdl.checksum import ChecksumError, digest

CHECKSUM_KEY = "checksum"
# A temporary file untouched for this long belongs to a writer that died.
STALE_SECONDS = 3600.0


def write_sealed(payload: dict[str, Any], path: str | Path) -> None:
    """Writes ``payload`` plus its checksum to ``path``, atomically
    (:func:`save_atomically`)."""
    save_atomically({**payload, CHECKSUM_KEY: digest(payload)}, path)


def save_atomically(obj: Any, path: str | Path) -> None:
    """``torch.save`` of ``obj`` to a temporary file next to ``path``, renamed
    over it once complete and on disk.

    Raises:
        OSError: naming ``path`` when the file cannot be written (e.g. the
            disk is full); ``path`` is then as it was before.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:16]}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "xb") as file:  # a file object: torch.save then raises the OSError itself
            torch.save(obj, file)
            file.flush()
            os.fsync(file.fileno())  # write errors of the file system surface here, not later
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        message = (f"rdl could not write {path} ({exc.strerror or exc}); the file is left as "
                   "it was, and the next run writes it again")
        raise (OSError(exc.errno, message) if exc.errno else OSError(message)) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _remove_stale_temporaries(path)


def unseal(payload: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """``payload`` read from ``path`` without its checksum, once verified.

    Raises:
        ChecksumError: naming ``path`` when the content differs from the
            checksum written with it, or there is none.
    """
    content = {k: v for k, v in payload.items() if k != CHECKSUM_KEY}
    stored = payload.get(CHECKSUM_KEY)
    if stored is None:
        raise ChecksumError(f"{path} has no checksum (written by an older rdl)")
    if stored != digest(content):
        raise ChecksumError(f"{path} is corrupt: its content does not match the checksum "
                            "written with it")
    return content


def _remove_stale_temporaries(path: Path) -> None:
    """Deletes temporary files of ``path`` left by writers that died."""
    cutoff = time.time() - STALE_SECONDS
    for tmp in path.parent.glob(f".{escape(path.name)}.*tmp"):
        try:
            if tmp.stat().st_mtime < cutoff:
                tmp.unlink()
        except FileNotFoundError:  # another process removed or renamed it
            pass
