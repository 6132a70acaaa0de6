"""Turns ``scripts/benchmark.py``'s results into ``REPORT.md`` and PNG plots.

Kept apart from the measuring so a report can be redrawn from a saved
``results.json`` without measuring again:

    python scripts/benchmark_report.py benchmarks/results.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) if not isinstance(c, str) else c for c in row) + " |"
              for row in rows]
    return "\n".join(lines)


def logged(metric: str) -> str:
    """A metric's name in the training logs (``map@10`` -> ``map_at_10``)."""
    return metric.replace("@", "_at_")


def section_machine(raw: dict) -> str:
    m = raw["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    args = raw["args"]
    return (f"Measured {m['date']} on {m['cpu']}, {m['cores']} cores, {m['memory_gib']:.0f} GiB, "
            f"Python {m['python']}, rdl commit `{m['rdl_commit']}`.\n\n{versions}.\n\n"
            f"Run: `python scripts/benchmark.py --sizes {' '.join(args['sizes'])} "
            f"--epochs {args['epochs']}` ({args['threads']} intra-op thread(s) per measurement; "
            "each memory figure is the peak RSS of a fresh process)."
            + (f" The stage measurements (ingest to training step) were taken from "
               f"`{args['reuse']}`, an earlier run of the same script on the same machine; the "
               "tasks were trained again." if args.get("reuse") else ""))


def section_ingest(sets: dict) -> str:
    rows = []
    for name, r in sets.items():
        i = r["ingest"]
        rows.append([name, str(i["tables"]), f"{i['rows']:,}", i["seconds"],
                     i["rows"] / i["seconds"], i["peak_mib"]])
    return table(["database", "tables", "rows", "ingest s", "rows/s", "peak MiB"], rows)


def section_build(sets: dict) -> str:
    rows = []
    for name, r in sets.items():
        b, ref = r["build"], r.get("relbench")
        ours_added = b["peak_mib"] - b["loaded_mib"]
        if ref and "seconds" in ref:
            ref_added = ref["peak_mib"] - ref["loaded_mib"]
            extra = [ref["seconds"], ref["peak_mib"], ref_added, ref["seconds"] / b["seconds"],
                     b["peak_mib"] / ref["peak_mib"], ours_added / max(ref_added, 1e-9)]
        else:
            extra = [(ref or {}).get("error", "not run")] + ["–"] * 5
        rows.append([name, f"{b['nodes']:,}", f"{b['edges']:,}", b["seconds"], b["peak_mib"],
                     ours_added, *extra])
    return table(["database", "nodes", "edges", "rdl s", "rdl peak MiB", "rdl MiB added",
                  "RelBench s", "RelBench peak MiB", "RelBench MiB added", "speed-up",
                  "peak ratio", "added ratio"], rows)


def section_sampler(sets: dict) -> str:
    rows = [[n, r["sampler"]["last"] / 1e6, r["sampler"]["uniform"] / 1e6]
            for n, r in sets.items()]
    return table(["database", "`last` M edges/s", "`uniform` M edges/s"], rows)


def section_steps(sets: dict) -> str:
    rows = []
    for n, r in sets.items():
        s = r["steps"]
        rows.append([n, s["nodes"], s["eager"] * 1e3, s["compiled"] * 1e3, s["ratio"], s["first"],
                     s["warm"], str(s["recompiles"]), str(s["breaks"]), s["sps_eager"],
                     s["sps_compiled"]])
    return table(["database", "nodes/batch", "eager ms", "compiled ms", "speed-up",
                  "first compiled step s", "from warm cache s", "recompiles", "graph breaks",
                  "seeds/s eager", "seeds/s compiled"], rows)


def task_rows(sets: dict) -> tuple[list[list], list[str]]:
    rows, verdicts = [], []
    for name, r in sets.items():
        for config, t in r.get("tasks", {}).items():
            gnn, base = t["gnn"], t["baseline"]
            for split in ("val", "test"):
                gnn_metrics = {k.removeprefix(f"{split}_"): v for k, v in gnn[split].items()}
                for metric, value in base["metrics"][split].items():
                    ours = gnn_metrics.get(logged(metric))
                    trivial = base["trivial"][split].get(metric)
                    delta = None if ours is None else ours - value
                    rows.append([name, config, split, metric, trivial, value, ours, delta,
                                 sum(gnn["epoch_seconds"]) / len(gnn["epoch_seconds"])])
            metric = next(iter(base["metrics"]["test"]))
            ours = {k.removeprefix("test_"): v for k, v in gnn["test"].items()}.get(logged(metric))
            if metric == "auroc" and base.get("entity_level") and ours is not None:
                gap = (ours - base["metrics"]["test"][metric]) * 100
                verdicts.append(f"- {name} / {config}: test AUROC {ours:.3f} vs LightGBM "
                                f"{base['metrics']['test'][metric]:.3f}: {gap:+.1f} points "
                                f"({'met' if gap >= 2 else 'not met'})")
    return rows, verdicts


def plot_step_time(sets: dict, out: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    retail = [(r["ingest"]["rows"], r) for n, r in sets.items() if n.startswith("retail")]
    retail.sort(key=lambda p: p[0])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    sizes = [p[0] for p in retail]
    for key, label in (("eager", "eager"), ("compiled", "compiled")):
        left.plot(sizes, [p[1]["steps"][key] * 1e3 for p in retail], "o-", label=label)
    left.set(xscale="log", xlabel="rows in the database", ylabel="training step (ms)",
             title="Training step vs data size")
    left.legend()
    right.plot(sizes, [p[1]["build"]["seconds"] for p in retail], "o-", label="rdl build_graph")
    ref = [(s, p[1]["relbench"]["seconds"]) for s, p in zip(sizes, retail)
           if "seconds" in p[1].get("relbench", {})]
    if ref:
        right.plot(*zip(*ref), "s--", label="RelBench make_pkey_fkey_graph")
    right.set(xscale="log", yscale="log", xlabel="rows in the database", ylabel="seconds",
              title="Graph building vs data size")
    right.legend()
    fig.tight_layout()
    fig.savefig(out / "step_time_vs_size.png", dpi=120)
    plt.close(fig)
    return "step_time_vs_size.png"


def plot_metric_vs_epoch(sets: dict, out: Path) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(n, c, t) for n, r in sets.items() for c, t in r.get("tasks", {}).items()]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.5), squeeze=False)
    for ax, (name, config, t) in zip(axes[0], panels):
        metric = next(iter(t["baseline"]["metrics"]["val"]))
        curve = t["gnn"]["val_per_epoch"].get(f"val_{logged(metric)}", [])
        ax.plot(range(1, len(curve) + 1), curve, "o-", label="rdl GNN")
        ax.axhline(t["baseline"]["metrics"]["val"][metric], color="tab:orange", ls="--",
                   label="LightGBM")
        trivial = t["baseline"]["trivial"]["val"].get(metric)
        if trivial is not None:
            ax.axhline(trivial, color="grey", ls=":", label="trivial")
        ax.set(title=f"{name}: {config}", xlabel="epoch", ylabel=f"val {metric}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "metric_vs_epoch.png", dpi=120)
    plt.close(fig)
    return "metric_vs_epoch.png"


def write_report(raw: dict, out: Path) -> None:
    sets = raw["datasets"]
    rows, verdicts = task_rows(sets)
    step_plot = plot_step_time(sets, out)
    metric_plot = plot_metric_vs_epoch(sets, out)
    parts = [
        "# rdl benchmark report",
        section_machine(raw),
        "## Ingest (`rdl.connect`)", section_ingest(sets),
        "## Graph building (`build_graph`, no feature cache) beside RelBench",
        "Both start from the same tables already in memory, in a fresh process each. "
        "`peak` is the process's peak RSS while building (reset after loading, so it "
        "includes the loaded tables and the libraries, about 600 MiB); `added` is that "
        "peak minus the RSS before building, the memory graph building itself takes. "
        "RelBench first needs its keys renumbered 0..n-1 (done before the clock starts). "
        "Goal: >= 3x faster and <= 0.7x RelBench's peak memory.",
        section_build(sets),
        "## Sampler (two hops, fan-out [16, 16], 512 seeds a batch, median)",
        section_sampler(sets),
        "## Training step, eager vs `torch.compile` (interleaved, median of 20)",
        section_steps(sets),
        f"![step time and graph building vs size]({step_plot})",
        "## Task metrics: rdl's GNN vs the LightGBM feature baseline vs a trivial predictor",
        "Same task tables and splits for all three. The GNN row is the checkpoint with the "
        "best validation metric; `epoch s` is its mean epoch time (training + validation).",
        table(["database", "task", "split", "metric", "trivial", "LightGBM", "rdl GNN",
               "GNN − LightGBM", "epoch s"], rows) if rows else "No task was trained.",
        "Goal: rdl beats LightGBM by >= 2 AUROC points on every entity task.",
        "\n".join(verdicts) if verdicts else "",
    ]
    if metric_plot:
        parts.append(f"![validation metric per epoch]({metric_plot})")
    (out / "REPORT.md").write_text("\n\n".join(p for p in parts if p) + "\n")


if __name__ == "__main__":
    results = Path(sys.argv[1])
    write_report(json.loads(results.read_text()), results.parent)
