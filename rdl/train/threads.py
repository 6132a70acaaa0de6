"""Sets torch's CPU threads for one training process by :mod:`rdl.cpu_share`'s
plan, and says so."""
from __future__ import annotations

import os
import sys

import torch

from rdl.cpu_share import busy_cores, plan_threads, usable_cores


def apply_cpu_threads(workers: int = 0, keep_current: bool = False) -> int:
    """Sets torch's intra-op threads by :func:`plan_threads` and says so in
    one line on stderr (on the first process of each machine); returns the
    count in use. ``keep_current``: torch was loaded before rdl started.

    An ``RDL_NUM_THREADS`` is also exported as ``OMP_NUM_THREADS``, so the
    processes Lightning starts for DDP, and rdl's own per-process share of
    the cores, keep to it.
    """
    # DDP ranks start together and already share the cores by LOCAL_WORLD_SIZE;
    # counting each other as busy would take their share twice.
    together = os.environ.get("LOCAL_WORLD_SIZE", "1") not in ("", "1")
    threads, why = plan_threads(usable_cores(), os.environ, workers, keep_current,
                                busy=busy_cores(samples=0 if together else 3))
    if threads is not None:
        torch.set_num_threads(threads)
        if os.environ.get("RDL_NUM_THREADS", "").strip():
            os.environ["OMP_NUM_THREADS"] = str(threads)
    threads = torch.get_num_threads()
    if os.environ.get("LOCAL_RANK", "0") == "0":
        print(f"rdl: using {threads} CPU thread{'s' if threads != 1 else ''} ({why})",
              file=sys.stderr)
    return threads
