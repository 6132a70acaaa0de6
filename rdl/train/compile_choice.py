"""``model.compile: auto``: compile the model only when the run is long enough
to repay the compiler's start-up.

On this project's 2-core CPU machine (benchmarks/REPORT.md, "Speed goals"),
the first compiled step of the default model takes about 64 s with a cold
Inductor cache and a compiled step then saves about 35 ms per 512 seeds: it
pays off after about 1,800 steps, longer than any bundled task's fit. On a
CUDA GPU compiling is what the fused kernels are for, so it is always on
there; other devices run eager unless told otherwise.
"""
from __future__ import annotations

import math
from typing import Literal

CompileSetting = bool | Literal["auto"]

# Training steps from which compiling repays a cold start on the CPU (1,800 measured).
CPU_PAYBACK_STEPS = 2_000


def check_compile_setting(setting: object) -> None:
    """Raises a one-line error for anything but ``true``, ``false`` or ``"auto"``."""
    if not (isinstance(setting, bool) or setting == "auto"):
        raise ValueError(f"compile={setting!r} is not true, false or 'auto'")


def choose_compile(setting: CompileSetting, device_type: str,
                   steps: float) -> tuple[bool, str | None]:
    """Whether to compile a fit of ``steps`` optimizer steps on ``device_type``,
    and, for ``"auto"``, the reason in one line (to print)."""
    check_compile_setting(setting)
    if setting != "auto":
        return bool(setting), None
    if device_type == "cuda":
        return True, "model.compile auto: on (cuda)"
    if device_type != "cpu":
        return False, (f"model.compile auto: off (rdl has not measured torch.compile on "
                       f"{device_type}; model.compile: true forces it)")
    if math.isfinite(steps) and steps >= CPU_PAYBACK_STEPS:
        return True, (f"model.compile auto: on ({int(steps):,} training steps on the CPU; "
                      f"compiling repays its start-up after about {CPU_PAYBACK_STEPS:,})")
    known = f"{int(steps):,}" if math.isfinite(steps) else "an unknown number of"
    return False, (f"model.compile auto: off ({known} training steps on the CPU; compiling "
                   f"repays its start-up of about a minute only after about "
                   f"{CPU_PAYBACK_STEPS:,}; model.compile: true forces it)")
