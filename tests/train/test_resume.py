"""A ``rdl fit`` killed mid-epoch and resumed with ``--ckpt_path last`` ends
with the metrics of the same fit run without interruption, with or without
an average of the weights."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from rdl.testing.cli import CONFIGS, QUICK, rdl
from rdl.train.runs import checkpoint_step

STEPS = 45  # optimizer steps per epoch (data.min_steps_per_epoch; 1,000 seeds of 64 are 16)
EVERY = 7   # checkpoint.every_n_steps: 7, 14, ... 84: never at an epoch's end
FIT = ["fit", "--config", str(CONFIGS / "flights_to_ord.yaml"), *QUICK, "--data.max_seeds", "1000",
       "--data.batch_size", "64", "--data.min_steps_per_epoch", str(STEPS),
       "--checkpoint.every_n_steps", str(EVERY), "--trainer.log_every_n_steps", "1",
       "--trainer.max_epochs", "2", "--trainer.default_root_dir"]


def metrics(root: Path) -> pd.DataFrame:
    return pd.read_csv(root / "version_0/metrics.csv")


def kill_mid_epoch(cwd: Path, root: str, extra: list[str]) -> int:
    """Starts the fit and SIGKILLs it once its ``last.ckpt`` is one of the
    second epoch's (not its end's) and ``metrics.csv`` has rows of later steps
    (checked while the fit is stopped). Returns the checkpoint's step."""
    with open(cwd / "killed.log", "w") as log:
        fit = subprocess.Popen([sys.executable, "-m", "rdl", *FIT, root, *extra], cwd=cwd,
                               stdout=log, stderr=subprocess.STDOUT)
    last = cwd / root / "version_0/checkpoints/last.ckpt"
    deadline = time.monotonic() + 300
    try:
        while True:
            assert fit.poll() is None, (cwd / "killed.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint of the second epoch in 300 s"
            if last.is_file() and checkpoint_step(last) > STEPS:
                fit.send_signal(signal.SIGSTOP)
                step = checkpoint_step(last)
                if step < 2 * STEPS and metrics(cwd / root)["step"].max() > step:
                    return step
                fit.send_signal(signal.SIGCONT)
            time.sleep(0.01)
    finally:
        fit.send_signal(signal.SIGKILL)
        fit.wait()


@pytest.mark.parametrize("extra", [[], ["--ema.decay", "0.9"]], ids=["plain", "ema"])
def test_fit_killed_mid_epoch_resumes_to_the_uninterrupted_result(tmp_path, extra):
    done = rdl(*FIT, "whole", *extra, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    step = kill_mid_epoch(tmp_path, "cut", extra)
    assert step % EVERY == 0  # written by every_n_steps

    done = rdl(*FIT, "cut", *extra, "--ckpt_path", "last", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rdl fit: resuming from cut/version_0/checkpoints/last.ckpt" in done.stdout
    assert "ended before the epoch ended" not in done.stderr  # Lightning's worry, handled

    # epoch totals count this process's batches: after a restart, the epoch's rest
    per_process = ["epoch_seconds", "train_seeds"]
    whole = metrics(tmp_path / "whole").drop(columns=per_process)
    resumed = metrics(tmp_path / "cut").drop(columns=per_process)
    final = [frame["val_auroc"].dropna() for frame in (whole, resumed)]
    assert len(final[0]) == len(final[1]) == 2
    assert abs(final[1].iloc[-1] - final[0].iloc[-1]) < 1e-6
    # every row equal (train_loss at every step, validation metrics after every
    # epoch): those the killed fit logged after its checkpoint were replaced
    pd.testing.assert_frame_equal(resumed, whole, check_exact=False, atol=1e-6, rtol=0)
