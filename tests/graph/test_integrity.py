"""Feature and graph caches under faults: bytes flipped on disk are found and
rebuilt, concurrent writers each leave a complete file, and a full disk is a
clear error that leaves nothing behind."""
from __future__ import annotations

import errno
import multiprocessing
import os
import re
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch_frame
from torch_frame import TensorFrame

import rdl
from rdl.checksum import ChecksumError, digest
from rdl.graph import build_graph, load_graph, save_graph
from rdl.output_file import STALE_SECONDS
from rdl.graph.frame_io import load_frame, save_frame
from rdl.tasks import Task
from rdl.testing.views import make_views
from rdl.train import RelationalDataModule

AGES = [31.5, 42.25, 57.75, 23.0]


@pytest.fixture
def db(tmp_path) -> rdl.Database:
    pd.DataFrame({"user_id": [1, 2, 3, 4], "age": AGES,
                  "city": ["a", "b", "a", "c"]}).to_parquet(tmp_path / "users.parquet")
    return rdl.connect(tmp_path, schema={"tables": {"users": {"primary_key": "user_id"}}})


def ages(graph) -> torch.Tensor:
    return graph["users"].tf.feat_dict[torch_frame.numerical][:, 0]


def flip_inside(path: Path, tensor: torch.Tensor) -> None:
    """Flips a byte in the middle of ``tensor``'s data in the file ``path``
    (found by its bytes, which must occur there exactly once)."""
    raw = bytearray(path.read_bytes())
    pattern = tensor.contiguous().numpy().tobytes()
    start = raw.find(pattern)
    assert start >= 0 and raw.find(pattern, start + 1) < 0
    raw[start + len(pattern) // 2] ^= 0x5A
    path.write_bytes(bytes(raw))


@contextmanager
def quiet_cache():
    """Fails on any warning about a cache file."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*(cache|rebuild)")
        yield


def no_temporaries(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_digest_covers_content_and_structure_not_layout():
    x = torch.arange(12.0).reshape(3, 4)
    assert digest({"a": x.t(), "b": [1, "s"]}) == digest({"b": [1, "s"], "a": x.t().contiguous()})
    different = [x, x.t(), x.reshape(4, 3), x.double(), x + 1e-6, [x], (x,), {"a": x}, 1, 1.0,
                 True, "1", b"1", None, float("nan")]
    assert len({digest(v) for v in different}) == len(different)
    big = torch.randn(3_000_000)  # chunked and hashed in threads: still one byte matters
    changed = big.clone()
    changed[2_500_000] += 1
    assert digest(big) == digest(big.clone()) != digest(changed)
    with pytest.raises(TypeError, match="set"):
        digest({"a": {1, 2}})


def frame_file(cache, table: str):
    """The feature cache file of ``table`` (built for one set of columns)."""
    files = list(cache.glob(f"{table}.*.frame.pt"))
    assert len(files) == 1, files
    return files[0]


def test_flipped_feature_bytes_are_found_and_the_right_features_rebuilt(db, tmp_path):
    cache = tmp_path / "cache"
    build_graph(db, cache_dir=cache)
    path = frame_file(cache, "users")
    flip_inside(path, torch.tensor(AGES, dtype=torch.float32))
    with pytest.warns(UserWarning, match=f"'users' are unreadable.*{re.escape(str(path))} is corrupt"):
        rebuilt = build_graph(db, cache_dir=cache)
    assert ages(rebuilt).tolist() == AGES
    with quiet_cache():
        again = build_graph(db, cache_dir=cache)  # repaired: quiet, from the cache
    assert ages(again).tolist() == AGES


def test_flipped_graph_bytes_are_an_error_naming_the_file(db, tmp_path):
    graph = build_graph(db)
    path = tmp_path / "graph.pt"
    save_graph(graph, path)
    assert ages(load_graph(path)).tolist() == AGES
    flip_inside(path, ages(graph).contiguous())
    with pytest.raises(ChecksumError, match=f"{re.escape(str(path))} is corrupt"):
        load_graph(path)


def test_a_corrupt_graph_file_is_rebuilt_by_the_data_module(tmp_path):
    make_views().save(tmp_path / "views")
    task = Task(query="PREDICT EXISTS(views.*, 0, 10, days) FOR EACH users.user_id",
                val_timestamp="2022-03-22", test_timestamp="2022-04-01")
    graph_file = tmp_path / "graph.pt"

    def prepared():
        return RelationalDataModule(str(tmp_path / "views"), task, graph_file=str(graph_file),
                                    cache_dir=str(tmp_path / "cache")).prepare_graph()

    built = prepared()
    seconds = built["views"].tf.feat_dict[torch_frame.numerical][:, 0].clone()
    flip_inside(graph_file, seconds)
    with pytest.warns(UserWarning, match=f"{re.escape(str(graph_file))} is corrupt.*rebuilding"):
        rebuilt = prepared()
    assert torch.equal(rebuilt["views"].tf.feat_dict[torch_frame.numerical][:, 0], seconds)
    load_graph(graph_file)  # written again, and verifies


def frame_of(value: int, rows: int = 200_000) -> TensorFrame:
    return TensorFrame({torch_frame.numerical: torch.full((rows, 4), float(value))},
                       {torch_frame.numerical: ["a", "b", "c", "d"]})


def write_concurrently(path: str, writer: int, start, rounds: int) -> None:
    """One of two processes writing the same cache file again and again."""
    start.wait()
    for _ in range(rounds):
        save_frame(path, frame_of(writer), {}, key=f"writer-{writer}")


def test_two_processes_writing_one_cache_leave_a_complete_file(tmp_path):
    path = tmp_path / "cache" / "users.frame.pt"
    path.parent.mkdir()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    writers = [context.Process(target=write_concurrently, args=(str(path), i, start, 15))
               for i in (1, 2)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=300)
    assert [p.exitcode for p in writers] == [0, 0]
    key = torch.load(path, weights_only=True)["key"]
    tf, _ = load_frame(path, key)  # complete, and verifies
    writer = int(key.removeprefix("writer-"))
    assert torch.equal(tf.feat_dict[torch_frame.numerical],
                       frame_of(writer).feat_dict[torch_frame.numerical])
    assert no_temporaries(path.parent)


@pytest.fixture
def full_disk(monkeypatch):
    """``torch.save`` writes part of the file, then the disk is full."""
    original = torch.save

    def save(obj, target, *args, **kwargs):
        original(obj, target, *args, **kwargs)
        file = open(target, "r+b") if isinstance(target, (str, os.PathLike)) else target
        file.truncate(file.tell() // 2)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", save)
    return monkeypatch


def test_a_full_disk_is_a_clear_error_and_the_next_run_rebuilds(db, tmp_path, full_disk):
    cache = tmp_path / "cache"
    written = rf"could not write {re.escape(str(cache))}/users\.\w+\.frame\.pt "
    with pytest.raises(OSError, match=written + r"\(No space left on device\)") as info:
        build_graph(db, cache_dir=cache)
    assert info.value.errno == errno.ENOSPC
    assert list(cache.iterdir()) == []  # no partial file, no temporary one
    full_disk.undo()
    with quiet_cache():
        assert ages(build_graph(db, cache_dir=cache)).tolist() == AGES
        assert ages(build_graph(db, cache_dir=cache)).tolist() == AGES  # from the cache
    assert frame_file(cache, "users").is_file() and no_temporaries(cache)


def test_a_full_disk_keeps_the_graph_file_there_was(db, tmp_path, monkeypatch):
    graph = build_graph(db)
    path = tmp_path / "graph.pt"
    save_graph(graph, path)
    before = path.read_bytes()
    monkeypatch.setattr(torch, "save", lambda *a, **k: (_ for _ in ()).throw(
        OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    with pytest.raises(OSError, match=re.escape(f"could not write {path}")):
        save_graph(graph, path)
    assert path.read_bytes() == before and no_temporaries(tmp_path)


def test_temporaries_of_dead_writers_are_ignored_then_removed(db, tmp_path):
    cache = tmp_path / "cache"
    build_graph(db, cache_dir=cache)
    name = frame_file(cache, "users").name
    frame_file(cache, "users").unlink()
    stale, live = cache / f".{name}.0123abcd.tmp", cache / f".{name}.4567cdef.tmp"
    for tmp in (stale, live):
        tmp.write_bytes(b"half a file")
    old = time.time() - STALE_SECONDS - 60
    os.utime(stale, (old, old))
    assert ages(build_graph(db, cache_dir=cache)).tolist() == AGES
    assert not stale.exists() and live.exists()  # a live writer's file is left alone
    with quiet_cache():
        assert ages(build_graph(db, cache_dir=cache)).tolist() == AGES


def test_cache_files_without_a_checksum_are_rebuilt(db, tmp_path):
    cache = tmp_path / "cache"
    build_graph(db, cache_dir=cache)
    path = frame_file(cache, "users")
    payload = torch.load(path, weights_only=True)
    del payload["checksum"]
    payload["feats"]["numerical"]["values"] = torch.zeros_like(payload["feats"]["numerical"]["values"])
    torch.save(payload, path)
    with pytest.warns(UserWarning, match="has no checksum"):
        assert ages(build_graph(db, cache_dir=cache)).tolist() == AGES
    with quiet_cache():
        assert ages(build_graph(db, cache_dir=cache)).tolist() == AGES
