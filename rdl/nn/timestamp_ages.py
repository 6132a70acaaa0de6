"""How old each timestamp value is at its node's seed time, in days.

The row encoders read a timestamp column's calendar parts: an absolute date. A
signup date, a debut or a first order says most as an age at the prediction
time (a tenure), and the seed time reaches a node only through message
passing, which cannot subtract one from the other. The LightGBM baseline gets
these ages (:mod:`rdl.baseline.features`); :class:`~rdl.nn.BatchPacker` packs
them for the model too when it is built with ``timestamp_ages``.
"""
from __future__ import annotations

import torch
from torch import Tensor

from rdl.graph import SECONDS_PER_DAY

FEATURES_PER_COLUMN = 3
"""Signed ``log1p`` of the age in days, the age in decades (clipped to
[-10, 10]) and a missing flag."""


def timestamp_days(parts: Tensor) -> Tensor:
    r"""Days since 1970-01-01 (float64, ``NaN`` where missing) of PyTorch
    Frame timestamp parts ``[U, n, 7]``: year, month - 1, day - 1, weekday,
    hour, minute, second, every part ``-1`` when the value is missing."""
    missing = (parts < 0).any(dim=-1)
    parts = parts.clamp(min=0)
    year, month, day = parts[..., 0], parts[..., 1] + 1, parts[..., 2] + 1
    # Proleptic Gregorian day number, counting years from March so that the
    # leap day ends a year (H. Hinnant's days_from_civil).
    year = year - (month <= 2).to(year.dtype)
    era = torch.div(year, 400, rounding_mode="floor")
    year_of_era = year - era * 400
    day_of_year = torch.div(153 * ((month + 9) % 12) + 2, 5, rounding_mode="floor") + day - 1
    day_of_era = (year_of_era * 365 + torch.div(year_of_era, 4, rounding_mode="floor")
                  - torch.div(year_of_era, 100, rounding_mode="floor") + day_of_year)
    days = (era * 146097 + day_of_era - 719468).to(torch.float64)
    seconds = parts[..., 4] * 3600 + parts[..., 5] * 60 + parts[..., 6]
    days = days + seconds.to(torch.float64) / SECONDS_PER_DAY
    return torch.where(missing, torch.nan, days)


def timestamp_ages(parts: Tensor, gather: Tensor, seed_time: Tensor,
                   seed_index: Tensor) -> Tensor:
    r"""Age features ``[N, FEATURES_PER_COLUMN * n]`` of every node's
    timestamp columns at its seed time.

    Args:
        parts (Tensor): Timestamp parts of the distinct rows ``[U, n, 7]``.
        gather (Tensor): Row of each node ``[N]``.
        seed_time (Tensor): Seed times in seconds ``[B]``, or :obj:`None`
            when the seeds have none (all ages are then missing).
        seed_index (Tensor): Seed of each node ``[N]``.
    """
    days = timestamp_days(parts).index_select(0, gather)
    if seed_time is None:
        days = torch.full_like(days, torch.nan)
    else:
        seed_days = seed_time.to(torch.float64).div(SECONDS_PER_DAY).index_select(0, seed_index)
        days = seed_days.unsqueeze(-1) - days
    missing = torch.isnan(days)
    days = torch.where(missing, 0.0, days)
    features = torch.stack([days.sign() * torch.log1p(days.abs()),
                            (days / 3652.5).clamp(-10.0, 10.0),
                            missing.to(days.dtype)], dim=-1)
    return features.flatten(1).to(torch.float32)
