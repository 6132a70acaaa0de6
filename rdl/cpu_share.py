"""How many CPU threads one rdl process may use, decided without torch.

torch starts one intra-op thread per core by default, LightGBM and DuckDB too.
When other processes (DDP ranks, loader workers, a colleague's job) want the
same cores, the threads wait on one another and an epoch can take twice as
long. rdl gives each process its share of the cores it may run on
(``os.sched_getaffinity``) less the cores other work keeps busy (the 1-minute
load average, rounded, or the threads running right now where more), and lets
``RDL_NUM_THREADS`` (or an explicit ``OMP_NUM_THREADS``) decide instead.
Measured on 2 cores with another busy process: an epoch of
``flights_to_ord`` (1,500 seeds) took 1.5-1.9 s with one thread and 7.9-10.3 s
with two; on a quiet machine one thread costs at most the second core.
:mod:`rdl.train.threads` applies the plan to torch; ``rdl baseline`` to
LightGBM and DuckDB.
"""
from __future__ import annotations

import os
import time
from collections.abc import Mapping


def cpu_threads(cores: int, processes: int = 1, workers: int = 0) -> int:
    """Threads for one of ``processes`` processes sharing ``cores``, each
    feeding ``workers`` loader worker processes (torch gives a worker one
    thread, so one core each); never fewer than one."""
    return max(1, cores // max(1, processes) - max(0, workers))


def plan_threads(cores: int, env: Mapping[str, str], workers: int = 0,
                 keep_current: bool = False, busy: int = 0) -> tuple[int | None, str]:
    """The intra-op thread count to set (:obj:`None`: keep torch's) and why,
    in words.

    ``RDL_NUM_THREADS`` wins; an ``OMP_NUM_THREADS`` in ``env`` is kept, and
    so is torch's count with ``keep_current`` (torch was loaded, and maybe
    set, before rdl started); otherwise the cores are divided among the
    ``LOCAL_WORLD_SIZE`` processes on this machine and their ``workers``,
    after leaving out ``busy`` cores that other work uses (never all).
    Raises :class:`ValueError` for an ``RDL_NUM_THREADS`` that is not a
    positive whole number.
    """
    wanted = env.get("RDL_NUM_THREADS", "").strip()
    if wanted:
        if not wanted.isdigit() or int(wanted) < 1:
            raise ValueError(f"RDL_NUM_THREADS={wanted!r} must be a positive whole number")
        return int(wanted), f"RDL_NUM_THREADS={wanted}"
    if env.get("OMP_NUM_THREADS", "").strip():
        return None, f"OMP_NUM_THREADS={env['OMP_NUM_THREADS'].strip()}; RDL_NUM_THREADS overrides"
    if keep_current:
        return None, "set before rdl started; RDL_NUM_THREADS overrides"
    local = env.get("LOCAL_WORLD_SIZE", "1")
    processes = int(local) if local.isdigit() and int(local) > 0 else 1
    busy = min(max(0, busy), cores - 1)
    why = f"{cores} cores"
    if busy:
        why += f", {busy} busy"
    if processes > 1:
        why += f" / {processes} processes"
    if workers > 0:
        why += f" - {workers} loader workers"
    return cpu_threads(cores - busy, processes, workers), why + "; RDL_NUM_THREADS overrides"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def busy_cores(samples: int = 3, gap_s: float = 0.02) -> int:
    """Cores other work keeps busy: the 1-minute load average, rounded, or,
    where more, the threads running right now besides this one (the fewest
    over ``samples`` reads of ``/proc/loadavg``, ``gap_s`` apart, so a blip is
    not a busy core). The load average alone cannot see a process started
    in the same second: two fits started together then both took 2 threads
    on 2 cores and ran 5x slower. 0 where the OS reports neither."""
    try:
        average = int(os.getloadavg()[0] + 0.5)
    except (AttributeError, OSError):
        average = 0
    running = []
    for sample in range(samples):
        if sample:
            time.sleep(gap_s)
        count = running_threads()
        if count is None:
            return average
        running.append(count - 1)  # this process is running while it reads
    return max(average, min(running, default=0))


def running_threads(path: str = "/proc/loadavg") -> int | None:
    """Threads running or ready to run on this machine now (Linux's
    ``/proc/loadavg``, fourth field); :obj:`None` where it cannot be read."""
    try:
        with open(path) as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def process_threads() -> tuple[int, str]:
    """Threads for work outside torch (LightGBM, DuckDB) by :func:`plan_threads`,
    and why, in words; an ``OMP_NUM_THREADS`` given is that count. Raises
    :class:`ValueError` for a bad ``RDL_NUM_THREADS``."""
    threads, why = plan_threads(usable_cores(), os.environ, busy=busy_cores())
    if threads is None:  # OMP_NUM_THREADS, which LightGBM reads and DuckDB does not
        given = os.environ["OMP_NUM_THREADS"].strip()
        threads = int(given) if given.isdigit() and int(given) > 0 else usable_cores()
    return threads, why
