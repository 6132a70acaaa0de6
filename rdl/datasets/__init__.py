"""Databases that ship with rdl (or with a package it installs), and generated ones."""
from __future__ import annotations

from collections.abc import Callable

from rdl.datasets import nycflights13


def _synthetic_retail(schema=None):
    # Imported on use, so that ``python -m rdl.datasets.synthetic_retail`` runs
    # the module once, as ``__main__``.
    from rdl.datasets import synthetic_retail

    return synthetic_retail.load(schema=schema)


# Names ``rdl.connect`` and ``rdl inspect`` accept in place of a source.
BUNDLED: dict[str, Callable] = {"nycflights13": nycflights13.load,
                                "synthetic_retail": _synthetic_retail}

__all__ = ["BUNDLED", "nycflights13"]
