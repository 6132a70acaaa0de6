"""Node and edge type names that are safe as ``ModuleDict`` keys."""
from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^0-9A-Za-z_]")


def safe_name(name: str) -> str:
    """Replaces every character but letters, digits and ``_`` by ``_``."""
    cleaned = _UNSAFE.sub("_", name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"t_{cleaned}"


def forward_relation(fk_column: str) -> str:
    """Relation name of the child -> parent edge of a foreign key column."""
    return f"f2p_{safe_name(fk_column)}"


def reverse_relation(fk_column: str) -> str:
    """Relation name of the parent -> child edge of a foreign key column."""
    return f"rev_f2p_{safe_name(fk_column)}"
