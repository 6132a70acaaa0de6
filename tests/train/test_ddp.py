"""DDP: seed shards per process, and ``rdl fit/validate/predict`` with 2 CPU
processes (gloo) against the same runs in one process."""
from __future__ import annotations

import math
import os
import shutil
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rdl.testing.cli import CONFIGS, QUICK, rdl
from rdl.train.distributed import ShardSampler, shard_positions, share_cpu_threads

SEEDS = 1000  # --data.max_seeds: every split has more rows than this
BATCH = 250   # seeds per step in all; each of the 2 DDP processes takes half
STEPS = 8     # --data.min_steps_per_epoch: 1000 seeds are 4 steps, so two passes an epoch
RUN = [*QUICK, "--data.max_seeds", str(SEEDS), "--trainer.accelerator", "cpu",
       "--data.min_steps_per_epoch", str(STEPS)]
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


@settings(max_examples=300, deadline=None)
@given(num_seeds=st.integers(1, 300), world_size=st.integers(1, 6),
       batch_size=st.integers(1, 40), epoch=st.integers(0, 3), min_steps=st.integers(0, 25))
def test_training_shards_take_equal_steps_and_the_single_process_batches(
        num_seeds, world_size, batch_size, epoch, min_steps):
    samplers = [ShardSampler(num_seeds, rank, world_size, train=True, seed=7,
                             min_seeds=min_steps * batch_size) for rank in range(world_size)]
    for sampler in samplers:
        sampler.set_epoch(epoch)
    shards = [list(sampler) for sampler in samplers]
    assert [len(s) for s in samplers] == [len(shard) for shard in shards]
    steps = {math.ceil(len(shard) / batch_size) for shard in shards}
    assert len(steps) == 1 and steps.pop() >= min_steps  # equal steps, at least the floor
    # Reference: passes over all seeds, each shuffled anew by seed + epoch, laid
    # end to end and dealt out round-robin.
    generator = torch.Generator().manual_seed(7 + epoch)
    per_rank = max(math.ceil(num_seeds / world_size), min_steps * batch_size)
    passes = math.ceil(per_rank * world_size / num_seeds)
    order = torch.cat([torch.randperm(num_seeds, generator=generator)
                       for _ in range(passes)]).tolist()
    assert order[:num_seeds] == shard_positions(num_seeds, shuffle=True, seed=7,
                                                epoch=epoch).tolist()
    for rank, shard in enumerate(shards):
        assert shard == [order[rank + world_size * i] for i in range(per_rank)]
    counts = Counter(pos for shard in shards for pos in shard)
    assert set(counts) == set(range(num_seeds))
    assert max(counts.values()) - min(counts.values()) <= 1  # every seed equally often, +-1
    for k in range(math.ceil(per_rank / batch_size)):  # step k of all = batch k of one process
        step = [p for shard in shards for p in shard[k * batch_size:(k + 1) * batch_size]]
        end = min((k + 1) * batch_size, per_rank) * world_size
        assert sorted(step) == sorted(order[k * batch_size * world_size:end])


def test_a_floor_on_steps_repeats_the_seeds_in_a_new_order_every_pass():
    # 100 seeds, batch 32: 4 steps an epoch; a floor of 20 steps asks for 640 seeds.
    sampler = ShardSampler(100, train=True, seed=3, min_seeds=20 * 32)
    order = list(sampler)
    assert len(sampler) == len(order) == 640 and math.ceil(len(order) / 32) == 20
    assert sorted(Counter(order).values()) == [6] * 60 + [7] * 40
    passes = [order[i:i + 100] for i in range(0, 600, 100)]
    assert all(sorted(p) == list(range(100)) for p in passes)
    assert len({tuple(p) for p in passes}) == 6  # a fresh shuffle each pass
    assert list(ShardSampler(100, train=True, seed=3, min_seeds=640)) == order  # deterministic
    sampler.set_epoch(1)
    assert list(sampler)[:100] != passes[0]
    # two processes, 16 each: the same steps, the same 640 seeds in all
    shards = [list(ShardSampler(100, rank, 2, train=True, seed=3, min_seeds=20 * 16))
              for rank in range(2)]
    assert [len(s) for s in shards] == [320, 320]
    assert Counter(shards[0] + shards[1]) == Counter(order)
    # splits that are evaluated ignore the floor
    assert list(ShardSampler(100, min_seeds=640)) == list(range(100))
    assert list(ShardSampler(0, train=True, min_seeds=640)) == []


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
    # a copy outside the DDP run's folder: validate logs into a run of its own in `check`
    best = str(shutil.copy(ddp / "runs/version_0/checkpoints/best.ckpt", check / "best.ckpt"))
    done = rdl("validate", "--config", config, *RUN, "--ckpt_path", best, cwd=check)
    assert done.returncode == 0, done.stderr[-3000:]
    for name, extra in (("one", []), ("two", DDP)):
        done = rdl("predict", "--config", config, *RUN, "--ckpt_path", best, *extra,
                   "--prediction_writer.output", str(check / f"{name}.parquet"), cwd=check)
        assert done.returncode == 0, done.stderr[-3000:]
    return {"single": single, "ddp": ddp, "check": check}


def metrics(run: Path) -> pd.DataFrame:
    return pd.read_csv(run / "runs/version_0/metrics.csv")


def test_both_runs_take_the_floor_of_steps_per_epoch(runs):
    for run in (runs["single"], runs["ddp"]):
        assert metrics(run)["train_seeds"].dropna().tolist() == [STEPS * BATCH] * 2


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
    assert [p.name for p in (ddp / "runs").iterdir()] == ["version_0"]
    assert sorted(p.name for p in ddp.rglob("*.ckpt")) == ["best.ckpt", "last.ckpt"]
    assert torch.load(ddp / "runs/version_0/checkpoints/last.ckpt",
                      weights_only=True)["epoch"] == 1


def test_ddp_predictions_are_one_file_equal_to_one_process(runs):
    one = pd.read_parquet(runs["check"] / "one.parquet")
    two = pd.read_parquet(runs["check"] / "two.parquet")
    assert len(one) == SEEDS and one["tailnum"].is_unique
    pd.testing.assert_frame_equal(one, two, atol=1e-6, rtol=0)


def test_ddp_marks_the_categories_every_process_trained(runs):
    """Both runs train on the same seeds, so on the same categories: the DDP
    checkpoint must mark what either process's half-batches held, although DDP
    copies process 0's buffers to the other before every step."""
    def trained(run: Path) -> dict[str, torch.Tensor]:
        state = torch.load(run / "runs/version_0/checkpoints/last.ckpt",
                           weights_only=True)["state_dict"]
        return {k: v for k, v in state.items() if k.endswith(".trained")}
    one, two = trained(runs["single"]), trained(runs["ddp"])
    assert one and one.keys() == two.keys()
    assert sum(int(v.sum()) for v in one.values()) > 0
    for name, marks in one.items():
        assert torch.equal(marks, two[name]), name
