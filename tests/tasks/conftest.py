"""The shop database of :mod:`rdl.testing.shops`, fresh for each test."""
from __future__ import annotations

import pytest

from rdl.db.database import Database
from rdl.testing.shops import make_shop


@pytest.fixture
def shop() -> Database:
    return make_shop()
