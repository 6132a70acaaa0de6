"""Where rdl keeps what it makes for itself: converted datasets and caches."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def rdl_home() -> Path:
    """``$RDL_HOME``, by default ``~/.cache/rdl``."""
    return Path(os.environ.get("RDL_HOME", Path.home() / ".cache" / "rdl"))


def build_folder(folder: Path, build: Callable[[Path], None],
                 ready: Callable[[Path], bool]) -> Path:
    """``folder``, first filled by ``build`` unless ``ready`` says it is complete.

    ``build`` fills a private folder beside it, which is renamed into place
    when complete (replacing an incomplete or outdated one): processes started
    together may each build, but none of them fails or reads a half-written
    file, and the first rename wins."""
    if ready(folder):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        build(temp)
        if folder.is_dir() and not ready(folder):
            shutil.rmtree(folder, ignore_errors=True)
        temp.rename(folder)
    except OSError:
        if not ready(folder):  # else another process put its folder there first
            raise
    finally:  # gone after the rename
        shutil.rmtree(temp, ignore_errors=True)
    return folder
