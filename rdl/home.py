"""Where rdl keeps what it makes for itself: converted datasets and caches."""
from __future__ import annotations

import os
from pathlib import Path


def rdl_home() -> Path:
    """``$RDL_HOME``, by default ``~/.cache/rdl``."""
    return Path(os.environ.get("RDL_HOME", Path.home() / ".cache" / "rdl"))
