"""Seeds per second by schema width: the synthetic retail database as it is
(customers with 2 event tables) and with ``wide=true`` (10 more event tables
around the customer, some two hops away), the retail_churn task on both; the
wide one with a fan-out per edge type (``shared_fanout=False``) and with
the default ``shared_fanout="auto"`` (each hop's fan-out a budget per node
shared by its edge types where five or more bring it many neighbours, as the
customers' event tables do here).

For each, times rdl's data module loader (temporal sampling, the temporal
neighbour statistics and the model's packing) over training batches, and one
eager training step of the default model (forward, backward, AdamW), and
prints the medians side by side with the wide/narrow ratios. Run it alone:
timings are meaningless while other jobs share the cores.

    python scripts/bench_width.py [--batches 30] [--num-neighbors 16 8]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from rdl.nn import GraphSpec, ModelSettings, RelationalModel
from rdl.tasks import Task
from rdl.train import RelationalDataModule

TASK = dict(query="PREDICT COUNT(transactions.*, 0, 30, days) = 0 FOR EACH customers.customer_id "
                  "WHERE COUNT(transactions.*, -30, 0, days) > 0",
            val_timestamp="2024-11-01", test_timestamp="2024-12-01")
CASES = {"narrow": ("synthetic_retail", False), "wide": ("synthetic_retail?wide=true", False),
         "wide shared": ("synthetic_retail?wide=true", "auto")}


def measure(source: str, shared_fanout: bool | str, num_neighbors: list[int], batch_size: int,
            batches: int) -> dict:
    datamodule = RelationalDataModule(source, Task(**TASK), num_neighbors=num_neighbors,
                                      shared_fanout=shared_fanout, batch_size=batch_size,
                                      min_steps_per_epoch=0, leakage_guard="off")
    graph = datamodule.prepare_graph()
    torch.manual_seed(0)
    model = RelationalModel(GraphSpec.from_data(graph), seed_type="customers",
                            task_type="binary", settings=ModelSettings(
                                num_layers=len(num_neighbors)))
    datamodule.batch_transform = model.packer
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader_times, step_times, nodes = [], [], []
    iterator = iter(datamodule.loader(datamodule.split_seeds("train"), train=True))
    for i in range(batches + 3):
        start = time.perf_counter()
        batch = next(iterator)
        loaded = time.perf_counter()
        out = model(batch.inputs).squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(out, batch.y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        done = time.perf_counter()
        if i >= 3:  # warm-up batches are not timed
            loader_times.append(loaded - start)
            step_times.append(done - loaded)
            nodes.append(sum(int(n.numel()) for n in batch.inputs.node_id.values()))
    sampled = statistics.median(loader_times)
    step = statistics.median(step_times)
    return {"tables": len(graph.node_types), "edge types": len(graph.edge_types),
            "nodes/batch": statistics.median(nodes), "load s": sampled, "step s": step,
            "seeds/s loading": batch_size / sampled, "seeds/s total": batch_size / (sampled + step)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--num-neighbors", type=int, nargs="+", default=[16, 8])
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.2f}")
    rows = {name: measure(source, shared, args.num_neighbors, args.batch_size, args.batches)
            for name, (source, shared) in CASES.items()}
    print(f"retail_churn, fan-out {args.num_neighbors}, {args.batch_size} seeds a batch, "
          f"median of {args.batches} batches, 1 thread")
    ratios = [f"{name}/narrow" for name in rows if name != "narrow"]
    print(f"{'':<18}" + "".join(f"{name:>13}" for name in rows)
          + "".join(f"{name:>20}" for name in ratios))
    for key in rows["narrow"]:
        values = [rows[name][key] for name in rows]
        print(f"{key:<18}" + "".join(f"{v:>13.4g}" for v in values)
              + "".join(f"{v / values[0]:>20.2f}" for v in values[1:]))


if __name__ == "__main__":
    main()
