r"""How far above popularity can a recommender get on a task? A ceiling check.

The issue's goal for recommendation is 1.25x the better of the baseline and
popularity-without-seen. Where rdl misses it, this script asks whether any
classic recommender gets there, and where the room is:

- the seeds split into *cold* (no row of the target's table before the seed
  time: only what is popular, or the entity's own columns, can rank for them)
  and *warm* (some history);
- per group, the task's first metric for popularity-without-seen and the
  baseline's ranking (own past items, then popular);
- user-kNN plus popularity: each warm seed's 50 most similar entities (cosine
  over the items each had up to the seed time), the items those rated in the
  last target window, plus ``w * log(1 + n)`` recent popularity (and, where
  the task repeats items, ``v * log(1 + own count)``); ``w`` and ``v`` chosen
  on validation, reported on test;
- the warm-seed metric a model would need for 1.25x, cold seeds left at
  popularity.

    python scripts/rec_ceiling.py configs/plane_destinations.yaml

Pure NumPy/SciPy on the task's own rows (:func:`rdl.tasks.history.item_history`)
and labels (what ``rdl baseline`` scores), so the numbers are comparable with
``scripts/benchmark.py``'s.
"""
from __future__ import annotations

import argparse
import itertools

import numpy as np
import pandas as pd
import scipy.sparse as sp

from rdl.baseline.recommend import evaluate_ranking, recommend
from rdl.baseline.run import read_config
from rdl.tasks.history import REPEAT_THRESHOLD, item_history, repeat_rate
from rdl.tasks.query.windows import window_offset

NEIGHBOURS = 50
POPULARITY_WEIGHTS = (0.0, 0.5, 1.0, 2.0, 4.0)
OWN_WEIGHTS = (0.0, 1.0, 4.0, 16.0)
GOAL = 1.25


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", help="a recommendation task's config (YAML)")
    args = parser.parse_args()
    run, _ = read_config(args.config)
    db, task = run.connect(), run.task
    target = task.check(db).query.target
    window = window_offset(target.end - target.start, target.unit)
    rows = item_history(task, db)
    items = pd.Index(db[task.item_table].df[db[task.item_table].primary_key])
    repeats = repeat_rate(task, db, run.labels(db, "train")).rate >= REPEAT_THRESHOLD
    print(f"{args.config}: {task.metrics[0]}, items {len(items):,}, rows {len(rows):,}, "
          f"entities repeat items: {repeats}")

    splits = {}
    for split in ("val", "test"):
        labels = run.labels(db, split).reset_index(drop=True)
        splits[split] = Split(labels, rows, items, window, repeats)
    scorer = lambda ranked, labels: evaluate_ranking(  # noqa: E731
        ranked, labels["label"], items, task.metrics[:1], task.top_k)[task.metrics[0]]

    val, test = splits["val"], splits["test"]
    best = max(itertools.product(POPULARITY_WEIGHTS, OWN_WEIGHTS if repeats else (0.0,)),
               key=lambda wv: scorer(val.knn(*wv, task.top_k), val.warm_labels))
    print(f"user-kNN weights chosen on validation: popularity {best[0]:g}, own items {best[1]:g}")
    for name, split in splits.items():
        ranked = {"popularity, unseen": recommend(db, task, split.labels, exclude_seen=True),
                  "baseline (own, then popular)": recommend(db, task, split.labels)}
        print(f"\n{name}: {len(split.labels):,} seeds, {split.warm.sum():,} warm, "
              f"{(~split.warm).sum():,} cold")
        for label, lists in ranked.items():
            cold = scorer([x for x, w in zip(lists, split.warm) if not w], split.cold_labels)
            warm = scorer([x for x, w in zip(lists, split.warm) if w], split.warm_labels)
            print(f"  {label:<30} all {scorer(lists, split.labels):.4f}  cold {cold:.4f}  "
                  f"warm {warm:.4f}")
        knn = scorer(split.knn(*best, task.top_k), split.warm_labels)
        print(f"  {'user-kNN + popularity':<30} warm {knn:.4f}")
        reference = max(scorer(lists, split.labels) for lists in ranked.values())
        popular = ranked["popularity, unseen"]
        cold_sum = scorer([x for x, w in zip(popular, split.warm) if not w],
                          split.cold_labels) * (~split.warm).sum()
        need = (GOAL * reference * len(split.labels) - cold_sum) / max(split.warm.sum(), 1)
        print(f"  {GOAL}x the better reference ({reference:.4f}) needs warm seeds at "
              f"{need:.4f} with cold ones at popularity")


class Split:
    """One split's seeds, which have history, and user-kNN rankings for the warm ones."""

    def __init__(self, labels: pd.DataFrame, rows: pd.DataFrame, items: pd.Index,
                 window: pd.DateOffset, repeats: bool) -> None:
        self.labels, self.items, self.window, self.repeats = labels, items, window, repeats
        self.rows = rows
        key = labels.columns[0]
        first = rows.groupby(key)["time"].min()
        seen_from = labels[key].map(first)
        self.warm = (seen_from <= labels["timestamp"]).to_numpy()
        self.warm_labels = labels[self.warm].reset_index(drop=True)
        self.cold_labels = labels[~self.warm].reset_index(drop=True)

    def knn(self, popularity: float, own: float, k: int) -> list[list]:
        """Top-``k`` item keys for each warm seed, in :attr:`warm_labels` order."""
        out = [None] * len(self.warm_labels)
        key = self.labels.columns[0]
        for time, group in self.warm_labels.groupby("timestamp"):
            scores = self._scores(time, group[key], popularity, own)
            top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
            for row, (position, ranked) in enumerate(zip(group.index, top)):
                out[position] = [self.items[i] for i in ranked if scores[row, i] > -np.inf]
        return out

    def _scores(self, time, keys: pd.Series, popularity: float, own: float) -> np.ndarray:
        key = self.rows.columns[0]
        past = self.rows[self.rows["time"] <= time]
        recent = past[past["time"] > time - self.window]
        entities = pd.Index(past[key].unique())
        shape = (len(entities), len(self.items))

        def matrix(frame: pd.DataFrame) -> sp.csr_matrix:
            return sp.csr_matrix((np.ones(len(frame)), (entities.get_indexer(frame[key]),
                                  self.items.get_indexer(frame["item"]))), shape=shape)

        counts, recent_counts = matrix(past), matrix(recent)
        had = counts.copy()
        had.data[:] = 1.0
        norm = np.sqrt(np.asarray(had.sum(axis=1)).ravel())
        unit = sp.diags(1.0 / norm) @ had
        seeds = entities.get_indexer(keys)
        similar = (unit[seeds] @ unit.T).toarray()
        similar[np.arange(len(seeds)), seeds] = 0.0
        cut = np.argpartition(-similar, min(NEIGHBOURS, similar.shape[1] - 1), axis=1)
        mask = np.zeros_like(similar, dtype=bool)
        np.put_along_axis(mask, cut[:, :NEIGHBOURS], True, axis=1)
        similar[~mask] = 0.0
        scores = np.log1p(np.asarray(sp.csr_matrix(similar) @ recent_counts.toarray()))
        scores += popularity * np.log1p(np.asarray(recent_counts.sum(axis=0)).ravel())
        own_counts = counts[seeds].toarray()
        if self.repeats:
            scores += own * np.log1p(own_counts)
        else:
            scores[own_counts > 0] = -np.inf
        return scores


if __name__ == "__main__":
    main()
