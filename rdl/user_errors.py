"""rdl's own user errors and how every command reports them: one line,
``rdl COMMAND: error: ...``, exit status 2 (``RDL_TRACEBACK=1`` shows the
traceback); and its own warnings, ``rdl COMMAND: warning: ...``, without the
file, line and source that Python prints for a programmer. Imports nothing of
rdl, so any command's module may use it."""
from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

RDL_DIR = str(Path(__file__).resolve().parent)

USER_ERRORS = (
    "rdl.db.issues.SchemaError",
    "rdl.db.issues.SourceError",
    "rdl.nn.settings.SettingsError",
    "rdl.output_file.OutputFileError",
    "rdl.tasks.errors.TaskError",
    "rdl.train.checkpoint.CheckpointError",
    "rdl.train.runs.RunError",
)


def user_error_classes() -> tuple[type[BaseException], ...]:
    """The classes of :data:`USER_ERRORS` whose modules are loaded (an
    error of any other cannot have been raised)."""
    loaded = []
    for name in USER_ERRORS:
        module, _, cls = name.rpartition(".")
        if module in sys.modules:
            loaded.append(getattr(sys.modules[module], cls))
    return tuple(loaded)


def user_error(exc: BaseException) -> BaseException | None:
    """``exc`` if it is one of :data:`USER_ERRORS`, else the first one it
    wraps (Lightning and jsonargparse re-raise errors from their own
    ``except`` blocks, so follow ``__cause__`` and ``__context__``)."""
    classes = user_error_classes()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, classes):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def report(command: str, exc: BaseException) -> int:
    """Prints ``exc`` as ``rdl COMMAND: error: ...`` on stderr and returns
    exit status 2, or re-raises it when ``RDL_TRACEBACK`` is set (not 0)."""
    if os.environ.get("RDL_TRACEBACK", "0") not in ("", "0"):
        raise exc
    print(f"rdl {command}: error: {exc}", file=sys.stderr)
    return 2


def warning_format(command: str, fallback: Callable = warnings.formatwarning) -> Callable:
    """A :func:`warnings.formatwarning` that writes a user warning raised from
    rdl's own code as ``rdl COMMAND: warning: <message>`` and any other
    warning as ``fallback`` does."""
    def format_warning(message, category, filename, lineno, line=None) -> str:
        if issubclass(category, UserWarning) and str(filename).startswith(RDL_DIR):
            return f"rdl {command}: warning: {message}\n"
        return fallback(message, category, filename, lineno, line)
    return format_warning

