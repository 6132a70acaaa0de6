"""``rdl inspect`` as a user runs it."""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from rdl.cli import main


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rdl.cli", *args], capture_output=True, text=True)


def test_inspect_json_is_one_object_with_tables_and_issues():
    done = run("inspect", "nycflights13", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["tables"]["flights"]["rows"] == 336_776
    assert summary["tables"]["flights"]["foreign_keys"]["tailnum"] == "planes"
    assert summary["tables"]["weather"]["time_column"] == "time_hour"
    dangling = [i for i in summary["issues"] if i["column"] == "tailnum"]
    assert dangling[0]["count"] == 50_094  # plus 2,512 tailnums "NA", read as NULL


def test_inspect_report_and_plot(tmp_path, capsys):
    plot = tmp_path / "schema.png"
    assert main(["inspect", "nycflights13", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "flights  (336,776 rows)" in out
    assert "foreign key : tailnum -> planes" in out
    assert "value not found in planes.tailnum" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_schema_plot_draws_one_arrow_per_table_pair(flights_db):
    from rdl.db.schema_report import schema_links

    links = schema_links(flights_db)
    assert sorted(links[("flights", "airports")]) == ["dest", "origin"]  # one arrow, both labels
    assert sum(len(columns) for columns in links.values()) == sum(
        len(table.foreign_keys) for table in flights_db)


def test_inspect_bad_source_is_one_line_not_a_traceback(tmp_path):
    done = run("inspect", str(tmp_path / "missing.duckdb"))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "does not exist" in done.stderr


def test_inspect_does_not_import_torch():
    code = ("import sys; from rdl.cli import main; main(['inspect', 'nycflights13', '--json']);"
            "print('torch' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stderr.strip().endswith("False")


@pytest.mark.parametrize("args", [["inspect"], ["nonsense"]])
def test_usage_errors_exit_2(args):
    assert run(*args).returncode == 2


@pytest.mark.server
def test_labels_read_the_database_schema_the_config_names(postgres_db, tmp_path):
    ddl = """CREATE TABLE users (id INTEGER PRIMARY KEY);
             CREATE TABLE visits (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users (id),
                                  at TIMESTAMP)"""
    visits = pd.DataFrame({"id": [1, 2, 3], "user_id": [1, 1, 2],
                           "at": pd.to_datetime(["2024-01-02", "2024-01-20", "2024-02-03"])})
    url, schema = postgres_db({"users": pd.DataFrame({"id": [1, 2]}), "visits": visits}, ddl)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({
        "data": {"source": url, "sql_schema": schema},
        "task": {"query": "PREDICT COUNT(visits.*, 0, 10, days) FOR EACH users.id",
                 "val_timestamp": "2024-01-15", "test_timestamp": "2024-02-01"}}))
    out = tmp_path / "labels.parquet"
    assert main(["labels", "--config", str(config), "--split", "val", "--output", str(out)]) == 0
    labels = pd.read_parquet(out).set_index("id")["label"]
    assert labels.to_dict() == {1: 1, 2: 0}  # the visit of 01-20 is in (01-15, 01-25]


def test_inspect_says_a_table_many_tables_point_to_shares_its_fanout():
    from rdl.db import Database, Table
    from rdl.db.schema_report import WIDE_LINKS, format_report, sampling_hints
    from rdl.sampling.fanout import AUTO_SHARE_LINKS
    from rdl.testing.shops import make_shop

    assert WIDE_LINKS == AUTO_SHARE_LINKS  # the hint describes what the sampler does

    shop = make_shop()  # customers: orders, addresses and two referral keys point to it
    assert sampling_hints(shop) == [] and "foreign keys point to it" not in format_report(shop)
    assert sum(parent == "customers" for t in shop for parent in t.foreign_keys.values()) \
        == WIDE_LINKS - 1
    tickets = pd.DataFrame({"ticket_id": [1, 2], "customer_id": ["c1", "c1"],
                            "opened": pd.to_datetime(["2024-01-02", "2024-01-05"])})
    wide = Database({**{t.name: t for t in shop},
                     "tickets": Table("tickets", tickets, "ticket_id",
                                      {"customer_id": "customers"}, "opened", {})})
    (hint,) = sampling_hints(wide)
    assert hint.startswith(f"customers: {WIDE_LINKS} foreign keys point to it")
    assert "data.shared_fanout: auto, the default" in hint
    assert format_report(wide).endswith(f"\n  - {hint}")  # the sampling hints come last


def _baseball_files(folder):
    folder.mkdir()
    pd.DataFrame({"playerID": ["a01", "b01", "c01"], "birthYear": [1970, 1980, 1990]}).to_csv(
        folder / "People.csv", index=False)
    pd.DataFrame({"playerID": ["a01", "a01", "b01", "c01"], "yearID": [2000, 2001, 2000, 2001],
                  "H": [100, 120, 90, 80]}).to_csv(folder / "Batting.csv", index=False)
    return folder


def test_suggest_schema_writes_a_new_file_that_links_the_tables(tmp_path, capsys):
    from rdl.db import connect

    files = _baseball_files(tmp_path / "files")
    suggested = tmp_path / "suggested.yaml"
    assert main(["inspect", str(files), "--suggest-schema", str(suggested)]) == 0
    assert f"suggested schema written to {suggested}" in capsys.readouterr().out
    linked = connect(str(files), schema=str(suggested))
    assert linked["Batting"].foreign_keys == {"playerID": "People"}
    assert linked["Batting"].time_column == "yearID"

    before = suggested.read_text()
    done = run("inspect", str(files), "--suggest-schema", str(suggested))
    assert done.returncode == 2 and "exists" in done.stderr and "Traceback" not in done.stderr
    assert suggested.read_text() == before


def test_inspect_files_go_into_new_folders_and_never_onto_a_folder(tmp_path, capsys):
    files = _baseball_files(tmp_path / "files")
    suggested = tmp_path / "new" / "schema.yaml"
    assert main(["inspect", str(files), "--suggest-schema", str(suggested)]) == 0
    assert "People:" in suggested.read_text()
    assert main(["inspect", str(files), "--plot", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"rdl inspect: error: --plot {tmp_path} is a folder; "
                                       f"name a file in it, e.g. {tmp_path}/schema.png\n")


def test_suggest_schema_keeps_the_entries_of_the_schema_it_was_given(tmp_path):
    from rdl.db import connect

    files = _baseball_files(tmp_path / "files")
    pd.DataFrame({"award_id": [1, 2, 3], "playerID": ["a01", "b01", "y99"]}).to_csv(
        files / "Awards.csv", index=False)  # two players in three are known: a weak link
    mine = tmp_path / "mine.yaml"
    mine.write_text("tables:\n  People:\n    drop_columns: [birthYear]\n"
                    "  Batting:\n    stypes: {H: categorical}\n")
    suggested = tmp_path / "suggested.yaml"
    assert main(["inspect", str(files), "--schema", str(mine),
                 "--suggest-schema", str(suggested)]) == 0
    spec = yaml.safe_load(suggested.read_text())["tables"]
    assert spec["People"] == {"drop_columns": ["birthYear"], "primary_key": "playerID"}
    assert spec["Batting"]["stypes"] == {"H": "categorical"}
    linked = connect(str(files), schema=str(suggested))
    assert linked["Batting"].foreign_keys == {"playerID": "People"}
    assert "birthYear" not in linked["People"].df and linked["Batting"].stypes["H"] == "categorical"
    assert "Awards" not in spec or "foreign_keys" not in spec["Awards"]
    assert suggested.read_text().endswith(
        "# Links not added (check each; the line says why):\n#   Awards: playerID -> People   "
        "# only 66.7% of 3 values found: the rest would link to no row\n")


def test_suggest_schema_writes_nothing_where_nothing_is_suggested(tmp_path, capsys):
    suggested = tmp_path / "suggested.yaml"
    assert main(["inspect", "nycflights13", "--suggest-schema", str(suggested)]) == 0
    assert "suggest no keys or time columns" in capsys.readouterr().out
    assert not suggested.exists()
