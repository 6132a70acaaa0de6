"""Datasets by name: rdl's own come from its package metadata, and another
package's entry point is found the same way."""
from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

import pandas as pd
import pytest

import rdl
from rdl.db import SourceError, registry
from rdl.db.registry import DATASETS, GROUP


def test_rdl_registers_its_datasets():
    assert {"nycflights13", "synthetic_retail"} <= set(DATASETS)
    assert DATASETS["nycflights13"].__module__ == "rdl.datasets.nycflights13"


def test_another_packages_dataset_is_connected_by_name(tmp_path, monkeypatch):
    (tmp_path / "toy_dataset.py").write_text(
        "from rdl.testing.views import make_views\n\n\n"
        "def load(schema=None):\n    return make_views()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    toy = EntryPoint("toy", "toy_dataset", GROUP)
    monkeypatch.setattr(registry, "entry_points",
                        lambda group: [*entry_points(group=group), toy])
    db = rdl.connect("toy", upto="2022-02-01")
    assert set(db.tables) == {"users", "items", "views"}
    assert db["views"].df["at"].max() <= pd.Timestamp("2022-02-01")
    with pytest.raises(ValueError, match=r"the dataset 'toy' takes no options; drop \?x=1"):
        rdl.connect("toy?x=1")
    with pytest.raises(SourceError, match=r"the name of a dataset \(.*toy\)"):
        rdl.connect("tyo")
