"""``rdl fit --help`` from a cache: the text LightningCLI printed last time.

Building that help means importing Lightning and every class it documents,
several seconds before a line is shown. The text only changes with rdl's
code, the installed Lightning and jsonargparse, and the terminal's width, so
it is kept under ``$RDL_HOME/help`` keyed by all of those and printed from
there; the first call (or the first after a change) builds it as before.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import shutil
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from rdl.home import rdl_home
from rdl.output_file import write_atomically

PACKAGES = ("lightning", "jsonargparse", "torch")


def help_key(command: str) -> str:
    """What the help text of ``rdl COMMAND --help`` depends on, as a short digest."""
    digest = hashlib.blake2b(digest_size=12)
    digest.update(f"{command}|{shutil.get_terminal_size().columns}|".encode())
    for package in PACKAGES:
        try:
            digest.update(f"{package}={metadata.version(package)}|".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{package}=none|".encode())
    for path in sorted(Path(__file__).parent.rglob("*.py")):  # rdl's own code, as it is now
        stat = path.stat()
        digest.update(f"{path}|{stat.st_mtime_ns}|{stat.st_size}|".encode())
    return digest.hexdigest()


def print_help(command: str, build: Callable[[], object]) -> int:
    """Prints the help of ``rdl COMMAND``: cached, or made by ``build()`` (which
    prints it and exits, as LightningCLI does) and then cached."""
    path = rdl_home() / "help" / f"{command}-{help_key(command)}.txt"
    if path.is_file():
        sys.stdout.write(path.read_text())
        return 0
    captured = io.StringIO()
    status = 0
    with contextlib.redirect_stdout(captured):
        try:
            build()
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 0
    text = captured.getvalue()
    sys.stdout.write(text)
    if status == 0 and text:
        _write(path, text)
    return status


def _write(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` whole or not at all (a cache: failures are ignored)."""
    with contextlib.suppress(OSError):
        write_atomically(path, lambda file: file.write(text.encode()))
