"""Benchmark of rdl's temporal neighbour sampler on a synthetic retail graph.

The graph has customers, articles and timed transactions with skewed degrees
(lognormal customer activity, Zipf article popularity) and the four foreign-key edge
types an rdl graph builder makes (about 40M directed edges at full size). Seeds are
random customers at times uniform over the data span. Prints, per strategy, the
median sampled edges/s and batches/s including relabelling, beside the random-gather
ceiling and, if torch-sparse is installed, PyG's non-temporal sampler. Run it alone:
timings are meaningless while other jobs share the cores.

    python scripts/bench_sampler.py              # 1M customers, 10M transactions
    python scripts/bench_sampler.py --scale 0.1  # a quick run
"""
from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch_geometric.typing
from torch import Tensor
from torch_geometric.data import HeteroData
from torch_geometric.sampler import HeteroSamplerOutput, NodeSamplerInput

from rdl.sampling import TemporalNeighborSampler

DAY = 86_400
SPAN = 2 * 365 * DAY
START = 1_577_836_800  # 2020-01-01, in seconds.


def retail_graph(scale: float, parent_time: bool, generator: torch.Generator) -> HeteroData:
    r"""Builds the synthetic retail graph (1M customers, 100k articles and 10M
    transactions at :obj:`scale=1`); customers and articles are timed by sign-up
    when :obj:`parent_time` is set, else untimed."""
    num_customers = int(1_000_000 * scale)
    num_articles = int(100_000 * scale)
    num_transactions = int(10_000_000 * scale)

    activity = torch.empty(num_customers).log_normal_(0.0, 1.2, generator=generator)
    popularity = 1.0 / torch.arange(1, num_articles + 1, dtype=torch.float) ** 1.1
    popularity = popularity[torch.randperm(num_articles, generator=generator)]
    customer = _draw(activity, num_transactions, generator)
    article = _draw(popularity, num_transactions, generator)
    when = torch.randint(SPAN, (num_transactions,), generator=generator).sort().values

    data = HeteroData()
    data["customers"].num_nodes = num_customers
    data["articles"].num_nodes = num_articles
    data["transactions"].num_nodes = num_transactions
    data["transactions"].time = START + when
    if parent_time:  # Sign-up up to 30 days before the first purchase.
        for node_type, parent in (("customers", customer), ("articles", article)):
            first = torch.full((data[node_type].num_nodes,), SPAN, dtype=torch.long)
            first.scatter_reduce_(0, parent, when, "amin")
            lead = torch.randint(30 * DAY, first.shape, generator=generator)
            data[node_type].time = START + first - lead
    row = torch.arange(num_transactions)
    for name, parent, table in (
        ("customer_id", customer, "customers"),
        ("article_id", article, "articles"),
    ):
        data["transactions", f"f2p_{name}", table].edge_index = torch.stack([row, parent])
        data[table, f"rev_f2p_{name}", "transactions"].edge_index = torch.stack([parent, row])
    return data


def _draw(weight: Tensor, num: int, generator: torch.Generator) -> Tensor:
    cdf = weight.double().cumsum(0)
    uniform = torch.rand(num, dtype=torch.double, generator=generator) * cdf[-1]
    return torch.searchsorted(cdf, uniform).clamp_(max=weight.numel() - 1)


def time_batches(
    sample: Callable[[NodeSamplerInput], HeteroSamplerOutput],
    batches: list[NodeSamplerInput],
) -> tuple[float, float, float, float]:
    r"""Returns the medians of seconds per batch, sampled edges per batch, sampled
    edges per second, and sampled edges per second of this thread's CPU time (which
    excludes time the thread waited for a core)."""
    seconds, cpu_seconds, edges = [], [], []
    for inputs in batches:
        begin, cpu_begin = time.perf_counter(), time.thread_time()
        out = sample(inputs)
        seconds.append(time.perf_counter() - begin)
        cpu_seconds.append(time.thread_time() - cpu_begin)
        edges.append(sum(row.numel() for row in out.row.values()))
    rates = [e / s for e, s in zip(edges, seconds)]
    cpu_rates = [e / max(s, 1e-9) for e, s in zip(edges, cpu_seconds)]
    return (
        statistics.median(seconds),
        statistics.median(edges),
        statistics.median(rates),
        statistics.median(cpu_rates),
    )


def gather_ceiling(num_elements: int, repeats: int = 200) -> float:
    r"""Median random int64 elements gathered per second by :obj:`index_select`
    from a 40M-element tensor."""
    source = torch.randint(2**40, (40_000_000,))
    seconds = []
    for _ in range(repeats):
        index = torch.randint(source.numel(), (num_elements,))
        begin = time.perf_counter()
        source.index_select(0, index)
        seconds.append(time.perf_counter() - begin)
    return num_elements / statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="graph size factor")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--fanout", type=int, nargs="+", default=[64, 64])
    parser.add_argument("--batches", type=int, default=100, help="timed batches")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1,
                        help="timed passes over the batches; one median each")
    parser.add_argument("--parent-time", action="store_true",
                        help="time customers and articles by sign-up")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(args.seed)

    begin = time.perf_counter()
    data = retail_graph(args.scale, args.parent_time, generator)
    num_edges = sum(data[et].num_edges for et in data.edge_types)
    print(f"graph: {dict(data.num_nodes_dict)}, {num_edges:,} directed edges "
          f"(built in {time.perf_counter() - begin:.1f} s)")

    batches = []
    for _ in range(args.warmup + args.batches):
        seed = torch.randint(data["customers"].num_nodes, (args.batch_size,),
                             generator=generator)
        seed_time = START + torch.randint(SPAN, seed.shape, generator=generator)
        batches.append(NodeSamplerInput(None, seed, seed_time, "customers"))
    warmup, timed = batches[: args.warmup], batches[args.warmup:]
    print(f"{args.batch_size} seeds per batch, fan-out {args.fanout}, 1 thread, "
          f"medians over {args.batches} batches")

    rates, edges_per_batch = {}, []
    for strategy in ("uniform", "last"):
        begin = time.perf_counter()
        sampler = TemporalNeighborSampler(data, args.fanout, strategy=strategy, seed=0)
        build = time.perf_counter() - begin
        time_batches(sampler.sample_from_nodes, warmup)
        for _ in range(args.rounds):
            seconds, edges, rate, cpu_rate = time_batches(sampler.sample_from_nodes, timed)
            print(f"  temporal {strategy:7s}: {rate / 1e6:6.2f}M edges/s, "
                  f"{1 / seconds:6.0f} batches/s ({seconds * 1e3:.2f} ms, "
                  f"{edges:.0f} edges per batch; {cpu_rate / 1e6:.2f}M edges per "
                  f"CPU second; index built in {build:.1f} s)")
            rates.setdefault(strategy, []).append(rate)
        edges_per_batch.append(edges)

    num_gathered = int(statistics.median(edges_per_batch))
    ceiling = gather_ceiling(num_gathered)
    print(f"  gather ceiling  : {ceiling / 1e6:6.2f}M elements/s (index_select of "
          f"{num_gathered} random int64 from 40M)")
    for strategy, strategy_rates in rates.items():
        ratios = ", ".join(f"{rate / ceiling:.1%}" for rate in strategy_rates)
        print(f"  {strategy:7s} / ceiling: {ratios}")

    if torch_geometric.typing.WITH_TORCH_SPARSE:
        from torch_geometric.sampler import NeighborSampler

        pyg = NeighborSampler(data, args.fanout)
        untimed = [NodeSamplerInput(None, b.node, None, "customers") for b in batches]
        time_batches(pyg.sample_from_nodes, untimed[: args.warmup])
        seconds, _, rate, _ = time_batches(pyg.sample_from_nodes, untimed[args.warmup:])
        print(f"  PyG torch-sparse (non-temporal): {rate / 1e6:6.2f}M edges/s, "
              f"{1 / seconds:6.0f} batches/s")
    else:
        print("  PyG torch-sparse sampler: unavailable (torch-sparse not installed)")


if __name__ == "__main__":
    main()
