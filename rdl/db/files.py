"""File names derived from table names, which come from the data and cannot be trusted.

A table named ``../../x`` or ``/etc/x`` must not make rdl write outside the
folder it saves a database or caches features in.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from rdl.db.issues import SourceError

# Names kept as they are: lower case (no clash on case-insensitive file
# systems), no separators, not hidden, not ending in "." or " " (Windows drops
# those), and not shaped like a hashed name, so the two kinds never collide.
_PLAIN = re.compile(r"[a-z0-9_][a-z0-9_ .-]{0,63}(?<![. ])")
_HASHED = re.compile(r".*-[0-9a-f]{8}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def table_file_name(name: str, suffix: str) -> str:
    """The file name of table ``name``: the name itself when it is plain,
    otherwise the name with unsafe characters replaced by ``_`` plus a short
    hash of the real name, so that distinct names give distinct files."""
    if _PLAIN.fullmatch(name) and not _HASHED.fullmatch(name):
        return f"{name}{suffix}"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', name)[:64]}-{digest}{suffix}"


def inside(folder: str | Path, file_name: str) -> Path:
    """``folder / file_name``, refused unless it names a file directly in
    ``folder`` (no separators, ``..`` or absolute paths)."""
    folder = Path(folder)
    path = folder / file_name
    if file_name in ("", ".", "..") or path.parent != folder or "\0" in file_name:
        raise SourceError(
            f"File name {file_name!r} would lead outside {str(folder)!r}; rdl only reads and "
            "writes table files directly inside that folder. Rename the table or save it again."
        )
    return path


def table_path(folder: str | Path, name: str, suffix: str) -> Path:
    """Where table ``name``'s ``suffix`` file lives directly inside ``folder``."""
    return inside(folder, table_file_name(name, suffix))
