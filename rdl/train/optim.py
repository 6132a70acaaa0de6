"""The optimizer and its learning rate: AdamW with weight decay on weight matrices
only (fused where it can), the ``auto`` learning rate for a model's width, and a
linear warm-up followed by a cosine decay, set every optimizer step."""
from __future__ import annotations

import math
from functools import partial

import torch
from torch import Tensor
from torch.optim.lr_scheduler import LambdaLR

MIN_WARMUP_STEPS = 5  # Adam's moment estimates need a few steps before the full lr
AUTO_LR, AUTO_LR_CHANNELS = 0.003, 64  # lr "auto": 0.003 up to 64 channels, less above


def check_lr_setting(setting: object) -> None:
    """Raises unless ``setting`` is ``"auto"`` or a positive number."""
    if setting == "auto":
        return
    if isinstance(setting, bool) or not isinstance(setting, (int, float)) or not setting > 0:
        raise ValueError(f"lr={setting!r} must be a positive number or 'auto'")


def resolve_lr(setting: float | str, channels: int) -> float:
    """The learning rate of ``setting`` for a model ``channels`` wide."""
    if setting != "auto":
        return float(setting)
    return AUTO_LR * min(1.0, AUTO_LR_CHANNELS / channels)


def adamw(params: list[Tensor], lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW over ``params``, decaying weight matrices but not biases and norms."""
    groups = [{"params": [p for p in params if p.dim() >= 2]},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=lr,
                             weight_decay=weight_decay, fused=fusable(params))


def fusable(params: list[Tensor]) -> bool:
    """Whether AdamW's fused kernel can update ``params``: float tensors on
    the CPU or a CUDA device. On the CPU it steps 2.5-4 times faster than the
    default per-list kernels, a whole training step 1.03-1.23 times
    (``scripts/bench_optimizer.py``), most where large category vocabularies
    or shallow embeddings hold many weights."""
    return bool(params) and all(p.device.type in ("cpu", "cuda") and p.is_floating_point()
                                for p in params)


def warmup_cosine_schedule(optimizer: torch.optim.Optimizer, total: int, warmup: float,
                           floor: float) -> LambdaLR:
    """The per-step schedule of :func:`warmup_cosine` over ``total`` steps, a
    share ``warmup`` of them warming up."""
    return LambdaLR(optimizer, partial(warmup_cosine, total=total,
                                       warmup=warmup_steps(total, warmup), floor=floor))


def warmup_steps(total: int, warmup: float) -> int:
    """Warm-up steps for a share ``warmup`` of ``total`` optimizer steps."""
    if warmup == 0:
        return 0
    return min(max(math.ceil(warmup * total), MIN_WARMUP_STEPS), total // 2)


def warmup_cosine(step: int, *, total: int, warmup: int, floor: float) -> float:
    """Learning-rate factor of optimizer step ``step`` (from 0) of ``total``:
    a linear ramp that reaches 1 at step ``warmup``, then a cosine down to
    ``floor`` at the last step (and ``floor`` after it)."""
    if step < warmup:
        return (step + 1) / (warmup + 1)
    progress = min(1.0, (step - warmup) / max(1, total - 1 - warmup))
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))
