"""Turns ``scripts/benchmark.py``'s results into a markdown report with PNG plots,
or compares the task results of several runs side by side.

Kept apart from the measuring so a report can be redrawn from saved results
without measuring again:

    python scripts/benchmark_report.py benchmarks/results.json      # -> its report
    python scripts/benchmark_report.py benchmarks/aggr_sum.json -o benchmarks/aggr_sum.md
    python scripts/benchmark_report.py --compare benchmarks/results.json \
        benchmarks/aggr_sum.json -o benchmarks/compare.md
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

MODELS = (("trivial", "trivial"), ("popularity_unseen", "popularity, unseen"),
          ("lightgbm", "LightGBM"), ("gnn", "rdl fit"))


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def spread(stats: dict | None) -> str:
    """``mean ± sd`` over seeds (the mean alone when it never moved)."""
    if not stats:
        return "–"
    if stats["n"] > 1 and stats["max"] > stats["min"]:
        return f"{stats['mean']:.3f} ± {stats['std']:.3f}"
    return f"{stats['mean']:.3f}"


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) if not isinstance(c, str) else c for c in row) + " |"
              for row in rows]
    return "\n".join(lines)


def section_machine(raw: dict) -> str:
    m = raw["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    return (f"Measured {m['date']} on {m['cpu']}, {m['cores']} cores, {m['memory_gib']:.0f} GiB, "
            f"Python {m['python']}, rdl commit `{m['rdl_commit'] or 'unknown'}`.\n\n{versions}.\n\n"
            f"Run: `{command(raw['args'])}` ({raw['args']['threads']} intra-op thread(s) per "
            "measurement; each memory figure is the peak RSS of a fresh process)."
            + (f" The stage measurements (ingest to training step) were taken from "
               f"`{raw['args']['reuse']}`, an earlier run of the same script on the same machine."
               if raw["args"].get("reuse") else ""))


def command(args: dict) -> str:
    """The ``scripts/benchmark.py`` command line that made these results."""
    parts = ["python scripts/benchmark.py"]
    sections = args.get("sections", ["stages", "tasks"])
    if sections != ["stages", "tasks"]:
        parts.append("--sections " + " ".join(sections))
    if "stages" in sections:
        parts.append("--sizes " + " ".join(args["sizes"]))
    if "tasks" in sections:
        parts.append("--seeds " + " ".join(map(str, args["seeds"])))
        if args.get("override"):
            parts.append("--override " + " ".join(args["override"]))
        for flag in ("epochs", "max_seeds"):
            if args.get(flag) is not None:
                parts.append(f"--{flag.replace('_', '-')} {args[flag]}")
    return " ".join(parts)


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


def task_rows(tasks: dict) -> list[list]:
    rows = []
    for name, t in tasks.items():
        summary = t["summary"]
        for split in ("val", "test"):
            metrics = summary["metrics"].get(split, {})
            shared = {m for m, models in metrics.items() if set(models) - {"gnn"}}
            for metric, models in metrics.items():
                if shared and metric not in shared:
                    continue  # a metric only the GNN logs
                seeds = max(s["n"] for k, s in models.items() if k != "gnn_minus_lightgbm")
                rows.append([name, t["source"], split, metric,
                             *(spread(models.get(key)) for key, _ in MODELS),
                             models.get("gnn_minus_lightgbm"), str(seeds),
                             summary["epoch_seconds"]])
    return rows


def verdicts(tasks: dict) -> list[str]:
    """Each task against its goal (issue 12), on the test split's means."""
    lines = []
    for name, t in tasks.items():
        test = t["summary"]["metrics"].get("test", {})
        metric = next(iter(test), None)
        models = test.get(metric, {})
        if "gnn" not in models or "lightgbm" not in models:
            lines.append(f"- {name}: not measured (a run failed; see the JSON)")
            continue
        ours, base = models["gnn"]["mean"], models["lightgbm"]["mean"]
        if t["task_type"] == "recommendation":
            if "popularity_unseen" not in models:
                lines.append(f"- {name}: popularity without seen items not measured")
                continue
            best = max(base, models["popularity_unseen"]["mean"])
            goal, met = f">= 1.25 x {best:.4f}", ours >= 1.25 * best
            text = f"test {metric} {ours:.4f} vs the better of LightGBM and unseen popularity"
        elif metric == "auroc":
            need = -1 if t["small"] else (2 if t["entity_level"] else 0)
            gap = (ours - base) * 100
            goal = {-1: "within 1 point", 0: ">= LightGBM", 2: "+2 points"}[need]
            met = gap >= need
            text = f"test AUROC {ours:.3f} vs LightGBM {base:.3f}: {gap:+.1f} points"
        else:
            continue
        lines.append(f"- {name}: {text} (goal {goal}: {'met' if met else 'not met'})")
    return lines


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
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out.name


def plot_metric_vs_epoch(tasks: dict, out: Path) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(n, t) for n, t in tasks.items() if t["summary"]["metrics"].get("val")]
    if not panels:
        return None
    cols = min(4, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.5 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (name, t) in zip(axes.flat, panels):
        models = t["summary"]["metrics"]["val"]
        metric = next(iter(models))
        for run in t["runs"]:
            curve = run["gnn"].get("val_per_epoch", {}).get(
                "val_" + metric.replace("@", "_at_"), [])
            ax.plot(range(1, len(curve) + 1), curve, "o-", ms=3,
                    label=f"rdl GNN, seed {run['seed']}")
        for key, label, style in (("lightgbm", "LightGBM", "--"), ("trivial", "trivial", ":"),
                                  ("popularity_unseen", "popularity, unseen", "-.")):
            if key in models[metric]:
                ax.axhline(models[metric][key]["mean"], ls=style, color="grey", label=label)
        ax.set(title=name, xlabel="epoch", ylabel=f"val {metric}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out.name


def section_tasks(tasks: dict, plot: str | None) -> list[str]:
    parts = [
        "## Task metrics: rdl's GNN vs the LightGBM baseline, popularity and a trivial predictor",
        "Same task tables and splits for all; each config as written, once per seed, the "
        "seed also seeding LightGBM. Cells are the mean ± sample sd over the seeds. `rdl fit` "
        "is what the command ships: the GNN's checkpoint with the best validation metric, "
        "and on binary and regression tasks its blend with LightGBM (`model.blend_baseline`), "
        "which `rdl test` scores; so its `test` rows are the blend's and its `val` rows the "
        "GNN's alone at its best epoch. `epoch s` is the GNN's mean epoch time "
        "(training + validation). `trivial` is the training rate, mean or majority, and for "
        "recommendation the most popular items of the last target window; `popularity, "
        "unseen` the most popular items the entity has not had yet.",
        table(["task", "database", "split", "metric", *(label for _, label in MODELS),
               "rdl fit − LightGBM", "seeds", "epoch s"], task_rows(tasks)),
        "Goals (issue 12, default config): GNN >= LightGBM + 2 AUROC points on entity "
        "tasks, >= LightGBM on event-level ones, within 1 point on small data; "
        "recommendation MAP >= 1.25x the better of LightGBM and unseen popularity.",
        "\n".join(verdicts(tasks)),
    ]
    if plot:
        parts.append(f"![validation metric per epoch]({plot})")
    return parts


def write_report(raw: dict, report: Path) -> None:
    """Writes the markdown report and its plots (named after it) beside it."""
    report.parent.mkdir(parents=True, exist_ok=True)
    sets, tasks = raw.get("datasets", {}), raw.get("tasks", {})
    parts = ["# rdl benchmark report", section_machine(raw)]
    if sets:
        step_plot = plot_step_time(sets, report.with_name(f"{report.stem}_step_time.png"))
        parts += [
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
        ]
    if tasks:
        plot = plot_metric_vs_epoch(tasks, report.with_name(f"{report.stem}_metric_vs_epoch.png"))
        parts += section_tasks(tasks, plot)
    report.write_text("\n\n".join(p for p in parts if p) + "\n")


def compare(results: dict[str, dict]) -> str:
    """The test split's first metric of every task, one GNN column per run
    (labelled with its overrides), beside LightGBM (of the first run that has it)."""
    names = list(results)
    tasks = list(dict.fromkeys(t for raw in results.values() for t in raw.get("tasks", {})))
    rows = []
    for task in tasks:
        found = [results[n].get("tasks", {}).get(task) for n in names]
        tests = [t["summary"]["metrics"].get("test", {}) if t else {} for t in found]
        scored = [m for test in tests for m, models in test.items() if set(models) - {"gnn"}]
        if not scored:
            continue
        metric = scored[0]  # the task's first metric (the baseline's order)
        models = [test.get(metric, {}) for test in tests]
        base = next((m["lightgbm"] for m in models if "lightgbm" in m), None)
        rows.append([task, metric, spread(base), *(spread(m.get("gnn")) for m in models)])
    labels = [f"GNN: {n} ({' '.join(results[n]['args'].get('override') or []) or 'defaults'})"
              for n in names]
    return "# rdl benchmark: runs side by side\n\n" + table(
        ["task", "test metric", "LightGBM", *labels], rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", help="results JSON file(s) of scripts/benchmark.py")
    parser.add_argument("--compare", action="store_true",
                        help="one table of the runs' task results side by side")
    parser.add_argument("-o", "--output", default=None,
                        help="the markdown file (default: the run's own report, or "
                             "compare.md beside the first results)")
    args = parser.parse_args()
    raws = {Path(p).stem: json.loads(Path(p).read_text()) for p in args.results}
    if args.compare:
        out = Path(args.output or Path(args.results[0]).with_name("compare.md"))
        out.write_text(compare(raws))
    else:
        raw = next(iter(raws.values()))
        out = Path(args.output or raw["args"].get("report")
                   or Path(args.results[0]).with_suffix(".md"))
        write_report(raw, out)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
