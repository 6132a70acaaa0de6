"""String keys and name checks shared by the modules of :mod:`rdl.nn`."""
from __future__ import annotations

from collections.abc import Iterable

from torch_geometric.typing import EdgeType


def edge_key(edge_type: EdgeType) -> str:
    r"""``(src, rel, dst)`` -> ``"src__rel__dst"``, a ``ModuleDict``-safe key."""
    return "__".join(edge_type)


def type_key(node_type: str) -> str:
    r"""Key of a node type in a ``ModuleDict``/``ParameterDict``: prefixed, since
    a table may be called ``items`` or ``keys`` (attributes of those dicts)."""
    return f"n_{node_type}"


def check_choice(argument: str, value: object, choices: Iterable[str]) -> str:
    r"""Returns :obj:`value` if it is one of :obj:`choices`, else raises a
    :class:`ValueError` naming the argument, the value and the valid choices."""
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"Unknown {argument}={value!r}; valid choices are {choices}")
    return value  # type: ignore[return-value]
