"""Files rdl writes whole or not at all: caches, checkpoints, what a command
writes for the user (predictions, labels, baseline results), and folders of
files that belong together (a saved database).

A file is written to a temporary file with a unique name next to it and
renamed over it once complete and on disk, so a reader (or another process
writing the same file) never sees half of one, and a failed write (a full
disk, a killed process) leaves the file that was there before. A path that
cannot be a file (an existing folder, a file where its folder should be) is
refused before the work that would fill it starts. A folder is filled next
to its place and then swapped in. Imports nothing of rdl, so every stage may
use it.
"""
from __future__ import annotations

import errno
import os
import shutil
import time
import uuid
from collections.abc import Callable
from glob import escape
from pathlib import Path
from typing import BinaryIO

# A temporary file untouched for this long belongs to a writer that died.
STALE_SECONDS = 3600.0


class OutputFileError(OSError):
    """A file rdl was asked to write cannot be written there; the message
    names the file and what to do (``errno`` keeps the cause's number)."""

    def __str__(self) -> str:  # the message alone, without OSError's "[Errno N]"
        return self.strerror or super().__str__()


def check_output_path(path: str | Path, option: str, example: str) -> Path:
    """``path`` as a :class:`~pathlib.Path`, or :class:`OutputFileError` when
    it names an existing folder, or a folder of it is an existing file.
    ``option`` names where the path came from (``--output``); ``example`` is
    a file name to suggest."""
    path = Path(path)
    if path.is_dir():
        raise OutputFileError(errno.EISDIR, f"{option} {path} is a folder; name a file in it, "
                                            f"e.g. {path / example}")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputFileError(errno.ENOTDIR, f"{option} {path}: {parent} is a file, "
                                                     "not a folder")
            break
    return path


def write_atomically(path: str | Path, write: Callable[[BinaryIO], object],
                     after_failure: str = "") -> Path:
    """Calls ``write(file)`` on a new temporary file next to ``path`` and
    renames it over ``path`` once complete and on disk.

    Raises:
        OutputFileError: naming ``path`` when it cannot be written (a full
            disk, no permission); ``path`` is then as it was before, and
            ``after_failure`` ends the message.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:16]}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "xb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())  # write errors of the file system surface here, not later
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        message = (f"rdl could not write {path} ({exc.strerror or exc}); the file is left as "
                   f"it was{after_failure}")
        raise (OutputFileError(exc.errno, message) if exc.errno
               else OutputFileError(message)) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    remove_stale_temporaries(path)
    return path


def write_folder_atomically(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Calls ``write(folder)`` on a new temporary folder next to ``path``,
    puts every file of it on disk, and swaps it in for ``path`` (which the
    caller has checked may be replaced): a reader sees the old folder or
    the new one, never a mix, and a failed write leaves the old one.

    Raises:
        OutputFileError: naming ``path`` when it cannot be written.
    """
    path = Path(path)
    if path.absolute() == Path.cwd() or not path.absolute().name:
        raise OutputFileError(errno.EBUSY, f"rdl writes {path} by swapping in a new folder, "
                                           "which it cannot do to the current folder or a "
                                           "root; name a folder in it, e.g. ./snapshot")
    token = uuid.uuid4().hex[:16]
    new = path.with_name(f".{path.name}.{token}.tmp")
    old = path.with_name(f".{path.name}.{token}.oldtmp")
    try:
        new.mkdir(parents=True)
        write(new)
        for file in new.rglob("*"):
            if file.is_file():
                with open(file, "rb") as handle:
                    os.fsync(handle.fileno())
        if path.exists():
            os.replace(path, old)
            try:
                os.replace(new, path)
            except OSError:
                os.replace(old, path)
                raise
            _remove(old)
        else:
            os.replace(new, path)
    except OSError as exc:
        shutil.rmtree(new, ignore_errors=True)
        message = f"rdl could not write {path} ({exc.strerror or exc}); it is left as it was"
        raise (OutputFileError(exc.errno, message) if exc.errno
               else OutputFileError(message)) from exc
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    remove_stale_temporaries(path)
    return path


def remove_stale_temporaries(path: Path) -> None:
    """Deletes temporary files and folders of ``path`` left by writers that died."""
    cutoff = time.time() - STALE_SECONDS
    for tmp in path.parent.glob(f".{escape(path.name)}.*tmp"):
        try:
            if tmp.lstat().st_mtime < cutoff:
                _remove(tmp)
        except FileNotFoundError:  # another process removed or renamed it
            pass


def _remove(path: Path) -> None:
    """Deletes a file, a link (not what it points to) or a folder."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
