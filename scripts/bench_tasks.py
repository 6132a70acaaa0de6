"""The benchmark's task section: each task config trained with several seeds, rdl's GNN
beside the LightGBM baseline, popularity and a trivial predictor, as mean and spread.

Every run uses the config as written (no per-task tuning), plus the seed
(``seed_everything`` and ``data.seed``, which also seeds LightGBM and any
``max_seeds`` subsample) and the ``--override`` options given to
``scripts/benchmark.py``, applied alike to the GNN and the baseline.
"""
from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
# Every bundled task, then the other data shapes (configs/retail_*_{small,norepeat,wide},
# retail_churn_small_norepeat), then customer value (regression) on the large and small shop.
TASKS = ("flights_to_ord", "airport_departures", "airport_arrivals", "flight_cancellation",
         "plane_destinations", "retail_churn", "retail_fraud", "retail_recommendation",
         "retail_churn_small", "retail_churn_norepeat", "retail_recommendation_norepeat",
         "retail_churn_wide", "retail_churn_small_norepeat", "retail_ltv", "retail_ltv_small")
# Small-data tasks, judged by their own goal (within 1 point of the baseline).
SMALL = ("retail_churn_small", "retail_churn_small_norepeat")


@dataclass
class Run:
    """What one case is trained with: seeds, overrides and quick-run caps."""

    seeds: list[int]
    overrides: list[str]
    epochs: int | None
    max_seeds: int | None
    threads: int
    workdir: Path


def config_path(task: str) -> Path:
    """A task name (a config in configs/) or a path to a YAML config."""
    path = Path(task) if task.endswith((".yaml", ".yml")) else CONFIGS / f"{task}.yaml"
    if not path.is_file():
        raise SystemExit(f"no config {path}; tasks are {', '.join(TASKS)} or a YAML path")
    return path


def seeded_config(task: str, seed: int, run: Run) -> dict:
    """The task's config with the seed, the overrides and the quick-run caps."""
    config = yaml.safe_load(config_path(task).read_text())
    config["seed_everything"] = seed
    options = [f"data.seed={seed}", *run.overrides]
    if run.epochs is not None:
        options.append(f"trainer.max_epochs={run.epochs}")
    if run.max_seeds is not None:
        options.append(f"data.max_seeds={run.max_seeds}")
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or not key:
            raise SystemExit(f"--override {option!r}: write section.key=value, e.g. "
                             "model.net.aggr=sum")
        *sections, name = key.split(".")
        node = config
        for section in sections:
            node = node.setdefault(section, {})
            node = node.get("init_args", node)
        node[name] = yaml.safe_load(value)
    return config


def run_task(task: str, run: Run) -> dict:
    """Every seed of one task: per-seed results and their summary."""
    runs = []
    for seed in run.seeds:
        folder = run.workdir / Path(task).stem / f"seed_{seed}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        config = folder / "config.yaml"
        config.write_text(yaml.safe_dump(seeded_config(task, seed, run), sort_keys=False))
        print(f"[{task}] seed {seed}: rdl fit + test ...", flush=True)
        result = {"seed": seed, "gnn": _guarded(fit_gnn, config, run.threads)}
        print(f"[{task}] seed {seed}: LightGBM baseline ...", flush=True)
        result["baseline"] = _guarded(fit_baseline, config, run.threads)
        if result["baseline"].get("task_type") == "recommendation":
            print(f"[{task}] seed {seed}: popularity without seen items ...", flush=True)
            result["popularity_unseen"] = _guarded(popularity_unseen, config, run.threads)
        runs.append(result)
    info = next((r["baseline"] for r in runs if "task_type" in r.get("baseline", {})), {})
    return {"config": str(config_path(task)),
            "source": seeded_config(task, 0, run)["data"]["source"],
            "task_type": info.get("task_type"), "entity_level": info.get("entity_level"),
            "small": task in SMALL, "runs": runs, "summary": summarize(runs)}


def _guarded(step, config: Path, threads: int) -> dict:
    """A step's result, or its error (the benchmark goes on with the next)."""
    try:
        return step(config, threads)
    except Exception as exc:  # noqa: BLE001 - one failed run must not end a long benchmark
        print(f"  failed: {str(exc).strip().splitlines()[-1]}", flush=True)
        return {"error": str(exc)[-2000:]}


def fit_gnn(config: Path, threads: int) -> dict:
    """``rdl fit`` then ``rdl test`` on the best checkpoint, in ``config``'s folder;
    validation metrics per epoch and at the best epoch, test metrics, timings."""
    import pandas as pd
    import torch

    folder = config.parent
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    common = ["--config", str(config), "--trainer.enable_progress_bar", "false",
              "--trainer.enable_model_summary", "false"]
    rdl = [sys.executable, "-m", "rdl.cli"]
    start = time.perf_counter()
    done = subprocess.run(rdl + ["fit", *common], cwd=folder, env=env, capture_output=True,
                          text=True)
    fit_seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"rdl fit failed:\n{done.stderr[-2000:]}")
    fitted = _run_folder(done.stdout, folder)
    metrics = pd.read_csv(fitted / "metrics.csv")
    val_cols = [c for c in metrics.columns if c.startswith("val_") and c != "val_loss"]
    per_epoch = metrics.dropna(subset=val_cols[:1]).groupby("epoch")[val_cols].last()
    best = fitted / "checkpoints/best.ckpt"
    best_epoch = int(torch.load(best, weights_only=True, map_location="cpu")["epoch"])
    epoch_seconds = (metrics["epoch_seconds"].dropna().tolist()
                     if "epoch_seconds" in metrics else [fit_seconds / max(1, len(per_epoch))])
    start = time.perf_counter()
    done = subprocess.run(rdl + ["test", *common, "--ckpt_path", str(best)], cwd=folder,
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"rdl test failed:\n{done.stderr[-2000:]}")
    test = pd.read_csv(fitted / "metrics.csv").filter(like="test_")  # test writes there
    return {
        "val_per_epoch": {c: per_epoch[c].tolist() for c in val_cols},
        "val": _unprefixed(per_epoch.loc[best_epoch].to_dict(), "val_"),
        "test": _unprefixed(test.dropna(how="all").iloc[-1].dropna().to_dict(), "test_"),
        "best_epoch": best_epoch, "epoch_seconds": epoch_seconds,
        "fit_seconds": fit_seconds, "test_seconds": time.perf_counter() - start,
    }


def _run_folder(stdout: str, folder: Path) -> Path:
    """The run folder ``rdl fit`` printed: not the newest one in ``folder``, which
    another benchmark fitting the same config at the same time may have made."""
    match = re.search(r"^Run folder:\s+(.+)$", stdout, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"rdl fit printed no run folder:\n{stdout[-2000:]}")
    return folder / match.group(1).strip()


def _unprefixed(metrics: dict, prefix: str) -> dict:
    """``{"val_map_at_12": x}`` -> ``{"map@12": x}``: the baseline's metric names."""
    return {k.removeprefix(prefix).replace("_at_", "@"): float(v) for k, v in metrics.items()}


def fit_baseline(config: Path, threads: int) -> dict:
    """The LightGBM baseline, its trivial predictor included (``rdl baseline``)."""
    from rdl.baseline import run_baseline

    start = time.perf_counter()
    baseline = run_baseline(config, num_threads=threads).as_dict()
    return {**baseline, "seconds": time.perf_counter() - start}


def popularity_unseen(config: Path, threads: int) -> dict[str, dict[str, float]]:
    """Per split, the task's metrics of the most popular items of the last
    target window that the entity has not had up to its cutoff."""
    import pandas as pd

    from rdl.baseline.recommend import evaluate_ranking, recommend
    from rdl.baseline.run import read_config

    run, _ = read_config(config)
    task, db = run.task, run.connect()
    task.check(db)
    items = db[task.item_table]
    keys = pd.Index(items.df[items.primary_key])
    out = {}
    for split in ("val", "test"):
        labels = run.labels(db, split).reset_index(drop=True)  # the baseline's seeds
        ranked = recommend(db, task, labels, exclude_seen=True, threads=threads)
        out[split] = evaluate_ranking(ranked, labels["label"], keys, task.metrics, task.top_k)
    return out


def summarize(runs: list[dict]) -> dict:
    """Per split and metric (``metrics``): mean, sample sd, min and max over
    seeds of each model, and the GNN's mean minus LightGBM's; mean seconds per
    epoch and per seed (GNN fit and test, baselines)."""
    values: dict = {}
    for run in runs:
        baseline = run.get("baseline", {})  # first: its metrics come in the task's order
        sources = {"lightgbm": baseline.get("metrics", {}), "trivial": baseline.get("trivial", {}),
                   "popularity_unseen": run.get("popularity_unseen", {}), "gnn": run["gnn"]}
        for model, by_split in sources.items():
            for split in ("val", "test"):
                for metric, value in (by_split.get(split) or {}).items():
                    values.setdefault(split, {}).setdefault(metric, {}).setdefault(
                        model, []).append(value)
    metrics = {split: {metric: {model: _stats(v) for model, v in models.items()}
                       for metric, models in by_metric.items()}
               for split, by_metric in values.items()}
    for by_metric in metrics.values():
        for models in by_metric.values():
            if "gnn" in models and "lightgbm" in models:
                models["gnn_minus_lightgbm"] = models["gnn"]["mean"] - models["lightgbm"]["mean"]
    epochs = [s for r in runs for s in r["gnn"].get("epoch_seconds", [])]
    return {"metrics": metrics, "epoch_seconds": statistics.fmean(epochs) if epochs else None,
            "run_seconds": statistics.fmean(
                [r["gnn"].get("fit_seconds", 0) + r["gnn"].get("test_seconds", 0)
                 + r.get("baseline", {}).get("seconds", 0) for r in runs])}


def _stats(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values)}
