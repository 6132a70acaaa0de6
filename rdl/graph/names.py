"""Node and edge type names that are safe as ``ModuleDict`` keys."""
from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^0-9A-Za-z_]")
# The relation of a child -> parent edge: this prefix and the foreign key column.
FORWARD_PREFIX = "f2p_"


def safe_name(name: str) -> str:
    """Replaces every character but letters, digits and ``_`` by ``_``."""
    cleaned = _UNSAFE.sub("_", name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"t_{cleaned}"


def forward_relation(fk_column: str) -> str:
    """Relation name of the child -> parent edge of a foreign key column."""
    return f"{FORWARD_PREFIX}{safe_name(fk_column)}"


def reverse_relation(fk_column: str) -> str:
    """Relation name of the parent -> child edge of a foreign key column."""
    return f"rev_{forward_relation(fk_column)}"
