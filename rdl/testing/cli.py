"""Running the ``rdl`` command as a user does, in a fresh Python process,
with the example configs of the repository."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# The repository's example configs (not installed with the package).
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# Options that make a fit of an example config take seconds.
# (Off a terminal, as here, the progress bar is off by itself.)
QUICK = ["--data.max_seeds", "1500", "--data.num_neighbors", "[8, 4]",
         "--model.net.channels", "32", "--trainer.enable_model_summary", "false"]


def rdl(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """``python -m rdl ARGS`` in ``cwd``, with ``env`` added to the
    environment; its output is captured as text, and it is killed after
    10 minutes."""
    return subprocess.run([sys.executable, "-m", "rdl", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **env})
