"""Files rdl writes for the user: whole or not at all, and refused early
where they cannot be written."""
from __future__ import annotations

import errno
import os

import pytest

from rdl.output_file import (
    OutputFileError, check_output_path, write_atomically, write_folder_atomically,
)


def test_a_write_that_fails_halfway_keeps_the_file_there_was(tmp_path):
    path = tmp_path / "predictions.parquet"
    path.write_bytes(b"yesterday's predictions")

    def write(file):
        file.write(b"half of today's")
        raise KeyboardInterrupt  # the user stops the command mid-write

    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, write)
    assert path.read_bytes() == b"yesterday's predictions"
    assert sorted(tmp_path.iterdir()) == [path]  # no temporary file left


def test_a_full_disk_is_one_clear_message_naming_the_file(tmp_path, monkeypatch):
    path = tmp_path / "out" / "labels.parquet"

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputFileError) as info:
        write_atomically(path, lambda file: file.write(b"rows"))
    assert str(info.value) == (f"rdl could not write {path} (No space left on device); the "
                               "file is left as it was")
    assert info.value.errno == errno.ENOSPC
    assert list((tmp_path / "out").iterdir()) == []
    monkeypatch.undo()
    assert write_atomically(path, lambda file: file.write(b"rows")) == path
    assert path.read_bytes() == b"rows"


def test_output_paths_that_cannot_be_files_are_refused(tmp_path):
    with pytest.raises(OutputFileError, match=f"^--output {tmp_path} is a folder; name a file "
                       f"in it, e.g. {tmp_path}/labels.parquet$"):
        check_output_path(tmp_path, "--output", "labels.parquet")
    blocker = tmp_path / "runs"
    blocker.write_text("")
    with pytest.raises(OutputFileError, match=f"{blocker} is a file, not a folder"):
        check_output_path(blocker / "a" / "b.parquet", "--output", "b.parquet")
    new = tmp_path / "new" / "deeper" / "labels.parquet"
    assert check_output_path(str(new), "--output", "labels.parquet") == new
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_a_folder_is_swapped_in_whole_and_stale_temporaries_go(tmp_path, monkeypatch):
    path = tmp_path / "snapshot"
    path.mkdir()
    (path / "old.txt").write_text("old")
    dead = tmp_path / ".snapshot.0123456789abcdef.tmp"  # a writer that died an hour ago
    dead.mkdir()
    (dead / "half.txt").write_text("half")
    os.utime(dead, (0, 0))

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputFileError, match=f"^rdl could not write {path} \\(No space left "
                                              "on device\\); it is left as it was$"):
        write_folder_atomically(path, lambda folder: (folder / "new.txt").write_text("new"))
    monkeypatch.undo()
    assert [p.name for p in path.iterdir()] == ["old.txt"]
    assert write_folder_atomically(
        path, lambda folder: (folder / "new.txt").write_text("new")) == path
    assert [p.name for p in path.iterdir()] == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot"]


def test_the_current_folder_is_not_swapped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputFileError, match="cannot do to the current folder"):
        write_folder_atomically(".", lambda folder: None)
    assert list(tmp_path.iterdir()) == []


def test_a_linked_folder_is_replaced_and_what_it_points_to_kept(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    link = tmp_path / "snapshot"
    link.symlink_to(target)
    write_folder_atomically(link, lambda folder: (folder / "new.txt").write_text("new"))
    assert not link.is_symlink() and [p.name for p in link.iterdir()] == ["new.txt"]
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "snapshot"]
