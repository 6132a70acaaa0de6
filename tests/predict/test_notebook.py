"""notebooks/quickstart.ipynb runs top to bottom (on a small slice)."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_executes(tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("RDL_QUICKSTART_SEEDS", "800")
    monkeypatch.setenv("RDL_QUICKSTART_EPOCHS", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # the training curve and the prediction histogram
    evaluation = notebook.cells[-1].outputs[-1]["data"]["text/plain"]
    assert "'auroc'" in evaluation
