"""DDP: seed shards per process, and ``rdl fit/validate/predict`` with 2 CPU
processes (gloo) against the same runs in one process."""
from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rdl.train.distributed import ShardSampler, shard_positions, share_cpu_threads
from tests.train.test_cli import CONFIGS, QUICK, rdl

SEEDS = 1000  # --data.max_seeds: every split has more rows than this
BATCH = 250   # seeds per step in all; each of the 2 DDP processes takes half
RUN = [*QUICK, "--data.max_seeds", str(SEEDS), "--trainer.accelerator", "cpu"]
DDP = ["--trainer.strategy", "ddp", "--trainer.devices", "2"]


# -- shards ------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(num_seeds=st.integers(0, 300), world_size=st.integers(1, 6))
def test_evaluation_shards_cover_every_seed_exactly_once(num_seeds, world_size):
    samplers = [ShardSampler(num_seeds, rank, world_size) for rank in range(world_size)]
    shards = [list(sampler) for sampler in samplers]
    assert [pos for shard in shards for pos in shard] == list(range(num_seeds))
    assert [len(s) for s in samplers] == [len(shard) for shard in shards]
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


@settings(max_examples=200, deadline=None)
@given(num_seeds=st.integers(1, 300), world_size=st.integers(1, 6),
       batch_size=st.integers(1, 40), epoch=st.integers(0, 3))
def test_training_shards_take_equal_steps_and_the_single_process_batches(
        num_seeds, world_size, batch_size, epoch):
    samplers = [ShardSampler(num_seeds, rank, world_size, train=True, seed=7)
                for rank in range(world_size)]
    for sampler in samplers:
        sampler.set_epoch(epoch)
    shards = [list(sampler) for sampler in samplers]
    assert [len(s) for s in samplers] == [len(shard) for shard in shards]
    assert len({math.ceil(len(shard) / batch_size) for shard in shards}) == 1  # equal steps
    # Reference: the one-process order, padded cyclically, dealt out round-robin.
    order = shard_positions(num_seeds, shuffle=True, seed=7, epoch=epoch).tolist()
    assert sorted(order) == list(range(num_seeds))
    per_rank = math.ceil(num_seeds / world_size)
    for rank, shard in enumerate(shards):
        assert shard == [order[(rank + world_size * i) % num_seeds] for i in range(per_rank)]
    assert set(pos for shard in shards for pos in shard) == set(range(num_seeds))
    if num_seeds % world_size == 0:  # step k of all ranks = batch k of one process
        step_size = world_size * batch_size
        for k in range(math.ceil(per_rank / batch_size)):
            step = [p for shard in shards for p in shard[k * batch_size:(k + 1) * batch_size]]
            assert sorted(step) == sorted(order[k * step_size:(k + 1) * step_size])


def test_training_order_changes_every_epoch_and_is_the_same_in_every_process():
    first, again = ShardSampler(100, 1, 2, train=True), ShardSampler(100, 1, 2, train=True)
    assert list(first) == list(again)
    again.set_epoch(1)
    assert list(again) != list(first)
    evaluation = ShardSampler(100, 1, 2)
    evaluation.set_epoch(1)
    assert list(evaluation) == list(range(50, 100))


def test_bad_rank_is_rejected():
    with pytest.raises(ValueError, match="rank=2 must lie in"):
        shard_positions(10, rank=2, world_size=2)


def test_processes_share_the_cpu_cores(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        threads = share_cpu_threads(2)
        assert threads == max(1, len(os.sched_getaffinity(0)) // 2)
        assert torch.get_num_threads() == threads
        assert share_cpu_threads(1) is None
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        assert share_cpu_threads(2) is None
    finally:
        torch.set_num_threads(before)


# -- rdl fit / validate / predict with 2 processes -----------------------------
@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A one-process fit, the same fit in 2 DDP processes (half the batch
    each), then (in ``check``) a one-process ``validate`` of the DDP
    checkpoint and ``predict`` with it in 1 and in 2 processes."""
    config = str(CONFIGS / "flights_to_ord.yaml")
    single, ddp, check = (tmp_path_factory.mktemp(name) for name in ("single", "ddp", "check"))
    for where, extra in ((single, ["--data.batch_size", str(BATCH)]),
                         (ddp, ["--data.batch_size", str(BATCH // 2), *DDP])):
        done = rdl("fit", "--config", config, *RUN, "--trainer.max_epochs", "2", *extra, cwd=where)
        assert done.returncode == 0, done.stderr[-3000:]
    best = str(ddp / "runs/csv/version_0/checkpoints/best.ckpt")
    done = rdl("validate", "--config", config, *RUN, "--ckpt_path", best, cwd=check)
    assert done.returncode == 0, done.stderr[-3000:]
    for name, extra in (("one", []), ("two", DDP)):
        done = rdl("predict", "--config", config, *RUN, "--ckpt_path", best, *extra,
                   "--prediction_writer.output", str(check / f"{name}.parquet"), cwd=check)
        assert done.returncode == 0, done.stderr[-3000:]
    return {"single": single, "ddp": ddp, "check": check}


def metrics(run: Path) -> pd.DataFrame:
    return pd.read_csv(run / "runs/csv/version_0/metrics.csv")


def test_every_training_seed_is_seen_once_per_epoch_in_both_runs(runs):
    for run in (runs["single"], runs["ddp"]):
        assert metrics(run)["train_seeds"].dropna().tolist() == [SEEDS, SEEDS]


def test_ddp_validation_metrics_match_the_single_process_run(runs):
    # Both runs take the same batches of 250 seeds (2 x 125 under DDP) from
    # the same initial weights; only float rounding of the gradients differs.
    one, two = (metrics(runs[r]).dropna(subset=["val_auroc"]) for r in ("single", "ddp"))
    assert len(one) == len(two) == 2
    for name in ("val_auroc", "val_loss"):
        assert one[name].to_numpy() == pytest.approx(two[name].to_numpy(), abs=1e-3), name


def test_ddp_validation_equals_one_process_validating_its_checkpoint(runs):
    logged = metrics(runs["ddp"]).dropna(subset=["val_auroc"])
    best = logged.loc[logged["val_auroc"].idxmax()]
    again = metrics(runs["check"]).iloc[-1]
    for name in ("val_auroc", "val_average_precision", "val_accuracy", "val_loss"):
        assert again[name] == pytest.approx(best[name], abs=1e-5), name


def test_ddp_writes_one_set_of_logs_and_checkpoints(runs):
    ddp = runs["ddp"]
    for logger in ("csv", "tensorboard"):
        assert [p.name for p in (ddp / "runs" / logger).iterdir()] == ["version_0"]
    assert sorted(p.name for p in ddp.rglob("*.ckpt")) == ["best.ckpt", "last.ckpt"]
    assert torch.load(ddp / "runs/csv/version_0/checkpoints/last.ckpt",
                      weights_only=True)["epoch"] == 1


def test_ddp_predictions_are_one_file_equal_to_one_process(runs):
    one = pd.read_parquet(runs["check"] / "one.parquet")
    two = pd.read_parquet(runs["check"] / "two.parquet")
    assert len(one) == SEEDS and one["tailnum"].is_unique
    pd.testing.assert_frame_equal(one, two, atol=1e-6, rtol=0)
