"""rdl writes only inside its own folders and never into the user's database location.

Table names come from the data, so they must not steer file paths; SQLite
paths with URL characters (``#``, ``?``, ``%``) must open the file they name,
read-only, and a missing file must not be created.
"""
from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pandas.testing as pdt
import pytest
import sqlalchemy as sa

import rdl
from rdl.db import Database, SourceError, Table
from rdl.db.database import METADATA_FILE
from rdl.db.files import table_file_name
from rdl.db.sql_source import create_readonly_engine
from rdl.graph.materialize import materialize_table
from rdl.output_file import OutputFileError
from rdl.testing.files import write_sqlite


# Names that escape a folder, need a sub-folder, differ only in case, or
# look like the hashed file names themselves.
HOSTILE = ["../../escaped", "sub/dir", "..", "Orders", "orders", "x-0123abcd", "a\\b", " "]


def hostile_db() -> Database:
    tables = {}
    for i, name in enumerate(HOSTILE):
        df = pd.DataFrame({"id": [1, 2], "up": [1, 2], "value": [float(i), i + 0.5]})
        keys = {"up": "../../escaped"} if name == "sub/dir" else {}
        tables[name] = Table(name, df, "id", keys, None, {"value": "numerical"})
    return Database(tables, source="hostile")


def files_under(root) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_save_keeps_every_table_file_inside_the_folder(tmp_path):
    folder = tmp_path / "a" / "b" / "saved"
    db = hostile_db()
    db.save(folder)
    files = [METADATA_FILE, *(table_file_name(n, ".parquet") for n in HOSTILE)]
    assert files_under(tmp_path) == {"a", "a/b", "a/b/saved"} | {f"a/b/saved/{f}" for f in files}
    back = rdl.connect(folder)
    assert sorted(back.tables) == sorted(HOSTILE)
    assert back["sub/dir"].foreign_keys == {"up": "../../escaped"}
    for name in HOSTILE:
        pdt.assert_frame_equal(back[name].df, db[name].df)


@pytest.mark.parametrize("name", ["orders", "user table", "2024_events.v2"])
def test_plain_names_keep_their_file_name(name):
    assert table_file_name(name, ".parquet") == f"{name}.parquet"


def test_distinct_names_never_share_a_file():
    names = HOSTILE + ["sub_dir", "sub\\dir", "_", "ORDERS", "x-0123abcd-" + "0" * 8, "é"]
    files = [table_file_name(n, ".parquet").lower() for n in names]  # case-insensitive disks
    assert len(set(files)) == len(names)
    assert all("/" not in f and "\\" not in f and not f.startswith(".") for f in files)


def test_folders_saved_before_file_names_were_recorded_still_load(tmp_path):
    db = Database({"orders": Table("orders", pd.DataFrame({"id": [1, 2]}), "id", {}, None, {})})
    db.save(tmp_path)
    meta = json.loads((tmp_path / METADATA_FILE).read_text())
    del meta["files"]
    (tmp_path / METADATA_FILE).write_text(json.dumps(meta))
    pdt.assert_frame_equal(rdl.connect(tmp_path)["orders"].df, db["orders"].df)


def test_old_metadata_cannot_point_outside_the_folder(tmp_path):
    folder = tmp_path / "saved"
    Database({"t": Table("t", pd.DataFrame({"id": [1]}), "id", {}, None, {})}).save(folder)
    (tmp_path / "secret.parquet").write_bytes((folder / "t.parquet").read_bytes())
    meta = json.loads((folder / METADATA_FILE).read_text())
    del meta["files"]
    meta["tables"][0]["name"] = "../secret"
    (folder / METADATA_FILE).write_text(json.dumps(meta))
    with pytest.raises(SourceError, match=r"'\.\./secret\.parquet' would lead outside"):
        rdl.connect(folder)


def test_feature_cache_stays_inside_its_folder(tmp_path):
    cache = tmp_path / "x" / "y" / "cache"
    db = hostile_db()
    for table in db:
        materialize_table(table, cache_dir=cache)
    # one set of columns everywhere: one id of it in every name
    suffix = next(cache.iterdir()).name.rsplit(".", 3)[-3:]
    assert files_under(tmp_path) == {"x", "x/y", "x/y/cache"} | {
        f"x/y/cache/{table_file_name(n, '.' + '.'.join(suffix))}" for n in HOSTILE
    }


@pytest.mark.parametrize("file_name", ["chin#1.sqlite", "a%41.sqlite", "wh?at.sqlite",
                                       "sp ace%20.sqlite"])
def test_sqlite_paths_with_url_characters_open_that_file_read_only(tmp_path, file_name):
    folder = tmp_path / "user data"
    folder.mkdir()
    path = folder / file_name
    write_sqlite(path, {"items": pd.DataFrame({"item_id": [1, 2, 3]})})
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    db = rdl.connect(str(path))
    assert db["items"].df["item_id"].tolist() == [1, 2, 3]
    engine = create_readonly_engine(sa.URL.create("sqlite", database=str(path)))
    with engine.connect() as conn, pytest.raises(sa.exc.OperationalError, match="readonly"):
        conn.exec_driver_sql("CREATE TABLE written (x INTEGER)")
    engine.dispose()
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before
    names = sqlite3.connect(path).execute("SELECT name FROM sqlite_master").fetchall()
    assert names == [("items",)]


def test_missing_sqlite_file_is_an_error_and_is_not_created(tmp_path):
    path = tmp_path / "nope#1.sqlite"
    url = sa.URL.create("sqlite", database=str(path)).render_as_string()
    with pytest.raises(SourceError, match="No SQLite database file at .*nope#1.sqlite"):
        rdl.connect(url)
    assert list(tmp_path.iterdir()) == []


def small_db(name: str, values: list[float]) -> Database:
    df = pd.DataFrame({"id": range(len(values)), "value": values})
    return Database({name: Table(name, df, "id", {}, None, {"value": "numerical"})},
                    source=name)


def test_a_save_stopped_half_way_leaves_the_saved_database_as_it_was(tmp_path, monkeypatch):
    folder = tmp_path / "snapshot"
    before = Database({**small_db("orders", [1.0, 2.0]).tables,
                       **small_db("users", [3.0]).tables})
    before.save(folder)
    original = {p.name: p.read_bytes() for p in folder.iterdir()}
    after = Database({**small_db("orders", [9.0]).tables, **small_db("users", [8.0]).tables})
    written = []
    real_to_parquet = pd.DataFrame.to_parquet

    def stop_at_second_table(df, *args, **kwargs):
        if written:
            raise KeyboardInterrupt  # the user stops the save after one table
        written.append(True)
        return real_to_parquet(df, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", stop_at_second_table)
    with pytest.raises(KeyboardInterrupt):
        after.save(folder)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot"]  # no temporary folder
    pdt.assert_frame_equal(rdl.connect(folder)["orders"].df, before["orders"].df)


def test_saving_again_replaces_the_whole_saved_database(tmp_path):
    folder = tmp_path / "snapshot"
    Database({**small_db("orders", [1.0]).tables, **small_db("gone", [2.0]).tables}).save(folder)
    newer = small_db("orders", [5.0, 6.0])
    newer.save(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["orders.parquet", METADATA_FILE]
    back = rdl.connect(folder)
    assert sorted(back.tables) == ["orders"]
    pdt.assert_frame_equal(back["orders"].df, newer["orders"].df)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot"]
    empty = tmp_path / "empty"
    empty.mkdir()
    newer.save(empty)
    pdt.assert_frame_equal(rdl.connect(empty)["orders"].df, newer["orders"].df)


def test_a_folder_of_other_files_is_never_saved_over(tmp_path):
    source = tmp_path / "shop"
    source.mkdir()
    (source / "orders.parquet").write_bytes(b"the user's own data")
    (source / "notes.txt").write_text("keep")
    with pytest.raises(OutputFileError, match=(
            f"^Database.save: {source} holds notes.txt, orders.parquet but no saved database "
            rf"\({METADATA_FILE}\); save into a new or empty folder, e.g. {source}/snapshot$")):
        small_db("orders", [1.0]).save(source)
    assert (source / "orders.parquet").read_bytes() == b"the user's own data"
    assert sorted(p.name for p in source.iterdir()) == ["notes.txt", "orders.parquet"]
    a_file = tmp_path / "snapshot"
    a_file.write_text("")
    with pytest.raises(OutputFileError, match="snapshot is a file; name a folder"):
        small_db("orders", [1.0]).save(a_file)
    assert a_file.read_text() == ""
