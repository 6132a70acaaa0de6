"""Peak memory and time of rdl's ingest against database size, on the synthetic
retail database (``rdl.datasets.synthetic_retail``) at several sizes.

For each size (transactions; default 1M 10M 30M) the database is generated once
under ``--data-dir`` (reused when present). Then, each in a fresh process so that
peaks do not carry over:

* build: ``rdl.connect`` (only the columns needed; ``--exclude``/``--upto``
  prune further), ``build_graph`` and ``save_graph``, with the peak resident
  memory of each stage (the kernel's high-water mark, reset between stages);
* load: ``load_graph(mmap=True)`` and one pass over every page of every
  tensor, with the process's own (anonymous) memory that adds and the mapped
  file pages it reads (shared page cache);
* fit: ``rdl fit`` on ``configs/retail_churn.yaml`` pointed at the database
  for one epoch, with the peak memory of its process tree (polled).

The table ends with the peak per million rows: flat across sizes means memory
grows linearly. Memory is what this measures; on a shared machine the times
are noisy. Run it by hand:

    python scripts/bench_scale.py 1M 10M --data-dir /tmp/rdl-scale
    python scripts/bench_scale.py 30M --data-dir /tmp/rdl-scale --skip-fit
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

PEAK = re.compile(r"VmHWM:\s+(\d+) kB")
NOW = re.compile(r"VmRSS:\s+(\d+) kB")
ANON = re.compile(r"RssAnon:\s+(\d+) kB")
FILE = re.compile(r"RssFile:\s+(\d+) kB")
FIT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "retail_churn.yaml"


# -- measuring, inside a child process -----------------------------------------
def _status(pattern: re.Pattern) -> float:
    with open("/proc/self/status") as status:
        return int(pattern.search(status.read()).group(1)) / 1024


class Stages:
    """Seconds and peak resident MiB per stage of this process."""

    def __init__(self) -> None:
        self.result: dict[str, dict[str, float]] = {"start": {"rss_mib": _status(NOW)}}

    def run(self, name: str, work):
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # reset the high-water mark to the current size
        start = time.perf_counter()
        out = work()
        self.result[name] = {"seconds": time.perf_counter() - start,
                             "peak_mib": _status(PEAK), "after_mib": _status(NOW)}
        return out


def child_build(source: str, graph_file: str, exclude: list[str], upto: str | None) -> dict:
    import torch

    torch.set_num_threads(1)
    import rdl
    from rdl.datasets.synthetic_retail import SCHEMA_FILE
    from rdl.graph import build_graph
    from rdl.graph.store import save_graph

    excluded: dict[str, list[str]] = {}
    for name in exclude:
        table, _, column = name.partition(".")
        excluded.setdefault(table, []).append(column)
    stages = Stages()
    db = stages.run("connect", lambda: rdl.connect(source, schema=SCHEMA_FILE,
                                                   exclude_columns=excluded or None, upto=upto))
    rows = {t.name: len(t) for t in db}
    graph = stages.run("build_graph", lambda: build_graph(db))
    del db
    stages.run("save_graph", lambda: save_graph(graph, graph_file))
    return {"rows": rows, "stages": stages.result, "graph_mib": Path(graph_file).stat().st_size / 2**20}


def child_load(graph_file: str) -> dict:
    """Maps the stored graph and reads a value of every page of every tensor:
    the pages land in the shared page cache (``RssFile``), not in this
    process's own memory (``RssAnon``)."""
    import torch

    from rdl.graph.store import load_graph

    stages = Stages()
    anon_before, file_before = _status(ANON), _status(FILE)
    graph = stages.run("load_graph", lambda: load_graph(graph_file))

    def touch() -> int:
        total = 0
        for store in graph.stores:
            for value in store.values():
                tensors = value.feat_dict.values() if hasattr(value, "feat_dict") else [value]
                for t in tensors:
                    t = t if isinstance(t, torch.Tensor) else getattr(t, "values", None)
                    if isinstance(t, torch.Tensor) and t.numel():
                        total += int(t.reshape(-1)[:: max(1, 4096 // t.element_size())].sum())
        return total

    stages.run("read_all", touch)
    return {"stages": stages.result, "anon_mib": _status(ANON) - anon_before,
            "file_mib": _status(FILE) - file_before}


# -- the parent -----------------------------------------------------------------
def run_child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"child {args[:2]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def tree_peak_mib(command: list[str], env: dict, log: Path) -> tuple[float, float, int]:
    """Runs ``command`` in ``log``'s folder; returns (seconds, peak summed RSS
    of its process tree, exit code)."""
    import psutil

    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent)
        root, peak = psutil.Process(proc.pid), 0
        while proc.poll() is None:
            try:
                procs = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in procs))
            except psutil.Error:
                pass
            time.sleep(0.2)
    return time.perf_counter() - start, peak / 2**20, proc.returncode


def ensure_data(data_dir: Path, transactions: int, fmt: str) -> Path:
    from rdl.datasets.synthetic_retail import generate

    target = data_dir / (f"retail_{transactions}" + (".duckdb" if fmt == "duckdb" else ""))
    done = data_dir / f".retail_{transactions}.{fmt}.done"
    if not done.is_file():
        print(f"generating {transactions:,} transactions into {target} ...", flush=True)
        generate(target, transactions=transactions, seed=0, format=fmt)
        done.touch()
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", default=["1M", "10M", "30M"])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/rdl-scale"))
    parser.add_argument("--format", choices=["parquet", "duckdb"], default="parquet")
    parser.add_argument("--exclude", nargs="*", default=[], help="TABLE.COLUMN not to read")
    parser.add_argument("--upto", default=None, help="read rows up to this time only")
    parser.add_argument("--skip-fit", action="store_true")
    parser.add_argument("--fit-args", default="--trainer.max_epochs 1 --data.max_seeds 20000 "
                        "--trainer.limit_val_batches 20",
                        help="extra options for rdl fit")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "build":
            result = child_build(rest[0], rest[1], args.exclude, args.upto)
        else:
            result = child_load(rest[0])
        print(json.dumps(result))
        return

    from rdl.datasets.synthetic_retail import parse_count

    args.data_dir.mkdir(parents=True, exist_ok=True)
    rows_out = []
    for size in args.sizes:
        n = parse_count(size)
        source = str(ensure_data(args.data_dir, n, args.format))
        source = f"duckdb:///{source}" if args.format == "duckdb" else source
        graph_file = args.data_dir / f"graph_{n}.pt"
        extra = [f"--exclude={e}" for e in args.exclude] + ([f"--upto={args.upto}"] if args.upto else [])
        build = run_child(["--child", "build", source, str(graph_file), *extra])
        load = run_child(["--child", "load", str(graph_file)])
        fit = None
        if not args.skip_fit:
            env = {**os.environ, "RDL_HOME": str(args.data_dir / "rdl_home")}
            schema = str(Path(__file__).resolve().parent.parent / "rdl/datasets/synthetic_retail.yaml")
            command = ["rdl", "fit", "--config", str(FIT_CONFIG), "--data.source", source,
                       *(["--data.schema", schema] if args.format == "parquet" else []),
                       *args.fit_args.split()]
            seconds, peak, code = tree_peak_mib(command, env, args.data_dir / f"fit_{n}.log")
            fit = {"seconds": seconds, "peak_mib": peak, "exit": code}
        rows_out.append((size, build, load, fit))
        report(rows_out)


def report(results) -> None:
    head = (f"{'size':>5} {'rows':>11} | {'connect s':>9} {'peak':>7} | {'graph s':>7} {'peak':>7} "
            f"{'graph':>7} | {'save peak':>9} | {'load s':>6} {'anon':>6} {'file':>6} | {'fit s':>6} {'peak':>7} |"
            f" {'MiB per 1M rows: connect':>24} {'build':>6} {'fit':>6}")
    print("\nPeak resident memory in MiB (each stage's own high-water mark, process total)")
    print(head)
    for size, build, load, fit in results:
        rows = sum(build["rows"].values())
        s = build["stages"]
        per = lambda mib: mib / (rows / 1e6)  # noqa: E731
        fit_s = f"{fit['seconds']:6.0f} {fit['peak_mib']:7.0f}" if fit and fit["exit"] == 0 else \
            f"{'failed' if fit else '-':>6} {'-':>7}"
        fit_per = f"{per(fit['peak_mib']):6.0f}" if fit and fit["exit"] == 0 else f"{'-':>6}"
        print(f"{size:>5} {rows:>11,} | {s['connect']['seconds']:9.1f} {s['connect']['peak_mib']:7.0f} | "
              f"{s['build_graph']['seconds']:7.1f} {s['build_graph']['peak_mib']:7.0f} "
              f"{build['graph_mib']:7.0f} | {s['save_graph']['peak_mib']:9.0f} | "
              f"{load['stages']['load_graph']['seconds']:6.2f} {load['anon_mib']:6.0f} {load['file_mib']:6.0f} | "
              f"{fit_s} | {per(s['connect']['peak_mib'] - s['start']['rss_mib']):24.0f} "
              f"{per(s['build_graph']['peak_mib'] - s['start']['rss_mib']):6.0f} {fit_per}")
    print("(MiB per 1M rows excludes the interpreter and libraries, "
          f"{results[0][1]['stages']['start']['rss_mib']:.0f} MiB, for connect and build)", flush=True)


if __name__ == "__main__":
    main()
