"""Reference for graph building: RelBench's ``make_pkey_fkey_graph`` on a
database saved by rdl (``Database.save``: one parquet file per table plus
``rdl_metadata.json`` with keys, time columns and stypes).

Runs in a Python that has relbench (it does not import rdl). Keys are first
renumbered 0..n-1 as RelBench requires (not timed: RelBench's own datasets
ship that way); texts are embedded with the same hashed n-grams rdl uses,
and missing texts become "" (RelBench crashes on them under pandas 3).
Prints one JSON line: seconds, the peak RSS while building (VmHWM, reset
after loading) and the RSS before building.

    /path/to/relbench-venv/bin/python scripts/relbench_graph.py SAVED_FOLDER
"""
from __future__ import annotations

import gc
import json
import re
import sys
import time
from pathlib import Path

import pandas as pd
import torch
from relbench.base import Database, Table
from relbench.modeling.graph import make_pkey_fkey_graph
from sklearn.feature_extraction.text import HashingVectorizer
from torch_frame import stype
from torch_frame.config.text_embedder import TextEmbedderConfig


def status_mib(field: str) -> float:
    status = Path("/proc/self/status").read_text()
    return int(re.search(field + r":\s+(\d+)", status).group(1)) / 1024


def start_phase() -> float:
    """Resets the peak RSS (VmHWM) to the current RSS and returns it."""
    Path("/proc/self/clear_refs").write_text("5")
    return status_mib("VmRSS")


class HashedNgrams:
    """Texts as L2-normalised signed hashed word 1-2-gram counts (64 dims)."""

    def __init__(self) -> None:
        self.vectorizer = HashingVectorizer(n_features=64, ngram_range=(1, 2),
                                            alternate_sign=True, norm="l2")

    def __call__(self, texts: list[str]) -> torch.Tensor:
        return torch.from_numpy(self.vectorizer.transform(texts).toarray()).float()


def relbench_database(folder: Path) -> tuple[Database, dict]:
    """The saved tables with keys renumbered, and the stype of every feature."""
    meta = json.loads((folder / "rdl_metadata.json").read_text())
    frames = {t["name"]: pd.read_parquet(folder / f"{t['name']}.parquet") for t in meta["tables"]}
    position = {}
    for t in meta["tables"]:
        keys = frames[t["name"]][t["primary_key"]]
        position[t["name"]] = pd.Series(range(len(keys)), index=pd.Index(keys))
    tables, stypes = {}, {}
    for t in meta["tables"]:
        df = frames[t["name"]].copy()
        df[t["primary_key"]] = range(len(df))
        for column, parent in t["foreign_keys"].items():
            df[column] = df[column].map(position[parent]).astype("Float64")
        for column, kind in t["stypes"].items():
            if kind == "text_embedded":
                df[column] = df[column].fillna("").astype(str)
        tables[t["name"]] = Table(df=df, fkey_col_to_pkey_table=dict(t["foreign_keys"]),
                                  pkey_col=t["primary_key"], time_col=t["time_column"])
        stypes[t["name"]] = {c: stype(kind) for c, kind in t["stypes"].items()}
    return Database(tables), stypes


def main() -> None:
    db, stypes = relbench_database(Path(sys.argv[1]))
    gc.collect()
    loaded = start_phase()
    start = time.perf_counter()
    graph, _ = make_pkey_fkey_graph(db, stypes,
                                    text_embedder_cfg=TextEmbedderConfig(HashedNgrams(), 8192))
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_mib": status_mib("VmHWM"), "loaded_mib": loaded,
                      "nodes": sum(graph[t].num_nodes for t in graph.node_types)}))


if __name__ == "__main__":
    main()
