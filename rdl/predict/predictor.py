"""Predicting from a notebook: a trained checkpoint, DataFrames in and out."""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import lightning as L
import pandas as pd
import torch
from torch_geometric.data import HeteroData

from rdl.db import Database
from rdl.graph import build_graph, to_unix_seconds
from rdl.graph.fingerprint import db_feature_columns, schema_mismatch, spec_feature_columns
from rdl.predict.explain import explain, plot_explanation
from rdl.sampling import SamplingSettings
from rdl.tasks import task_types as types
from rdl.tasks.run_data import RunData
from rdl.train.callbacks import prediction_frame
from rdl.train.checkpoint import CheckpointError, checked_weights
from rdl.train.data import RelationalDataModule
from rdl.train.info import CHECKPOINT_KEY, TaskInfo
from rdl.train.module import RelationalTask, module_arguments, stored_baseline_features
from rdl.train.plots import RunPlots
from rdl.train.quiet import lightning_info_muted
from rdl.train.recommend import ranked_scores
from rdl.train.seeds import Seeds, node_indices


class Predictor:
    r"""A trained rdl model bound to a database.

    .. code-block:: python

        model = rdl.Predictor.from_checkpoint("runs/.../best.ckpt")
        model.predict(ids=["N14228", "N24211"], at="2013-12-01")
        model.recommend(ids=["N14228"], at="2013-12-01", k=10)
        model.evaluate(split="test")

    Only rows with time ``<= at`` reach the model, so a newer copy of the
    database gives the same answer as the database as it was at ``at``.
    """

    def __init__(self, module: RelationalTask, datamodule: RelationalDataModule) -> None:
        self.module = module.eval()
        self.info: TaskInfo = module.info
        self.datamodule = datamodule

    @property
    def db(self) -> Database:
        """The database rows are read from (the data module's)."""
        return self.datamodule.db

    @property
    def graph(self) -> HeteroData:
        """The graph built from :attr:`db` (the data module's)."""
        return self.datamodule.graph

    @property
    def sampling(self) -> SamplingSettings:
        """How this predictor samples subgraphs: as the model was trained."""
        return self.datamodule.sampling()

    def __repr__(self) -> str:
        return (f"Predictor(task_type={self.info.task_type!r}, entity={self.info.seed_type!r}, "
                f"query={self.info.task.get('query') or self.info.task.get('sql')!r})")

    @classmethod
    def from_checkpoint(cls, path: str | Path, database: str | Database | None = None, *,
                        schema: str | dict | None = None, num_neighbors: list[int] | None = None,
                        batch_size: int = 256,
                        upto: str | pd.Timestamp | None = None) -> Predictor:
        r"""Loads a checkpoint written by ``rdl fit`` (safely: ``weights_only``;
        a :class:`~rdl.train.checkpoint.CheckpointError` if it is corrupt).

        Args:
            path (str): The ``.ckpt`` file.
            database (str or Database, optional): Where to read rows from; the
                training source when omitted.
            schema (str or dict, optional): Schema file; the training one
                (stored in the checkpoint) when omitted.
            num_neighbors (list[int], optional): Fan-outs; default: those the
                model was trained with (``[16] * num_layers`` for checkpoints
                that do not say).
            batch_size (int): Entities per forward pass. (default: :obj:`256`)
            upto (str or Timestamp, optional): Read only rows up to this time
                (filtered inside the database where it can be), for a large
                database and predictions at or before ``upto``; answers equal
                those from the whole database. (default: :obj:`None`)
        """
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
        if CHECKPOINT_KEY not in checkpoint:
            raise CheckpointError(f"{path} was not written by rdl fit (no task description in it)")
        info = TaskInfo.from_plain(checkpoint[CHECKPOINT_KEY])
        module = RelationalTask(**{**module_arguments(checkpoint["hyper_parameters"]),
                                   "compile": False})
        module.baseline_features = stored_baseline_features(checkpoint)
        module.build(info)
        weights = checked_weights(checkpoint, path)
        module.match_weights(weights)
        module.load_state_dict(weights)
        module.adopt_choices(checkpoint)
        run = RunData.from_plain(info.data, info.make_task())
        if schema is not None:
            run = dataclasses.replace(run, schema=schema)
        if isinstance(database, Database):
            db = database if upto is None else database.upto(upto)
        else:
            if database is not None:
                run = dataclasses.replace(run, source=database)
            db = run.connect(upto=upto)
        excluded = run.model_exclusions(db)
        mismatch = schema_mismatch(spec_feature_columns(info.spec.col_names_dicts),
                                   db_feature_columns(db, excluded))
        if mismatch is not None:
            raise ValueError(f"The checkpoint was trained on another schema: {mismatch}")
        graph = build_graph(db, exclude_columns=excluded, col_stats_dict=info.spec.col_stats_dict)
        sampling = SamplingSettings.from_plain(info.data, module.model.num_layers)
        if num_neighbors is not None:
            sampling = dataclasses.replace(sampling, num_neighbors=tuple(num_neighbors))
        datamodule = RelationalDataModule.from_parts(
            run, sampling, db, graph, classes=info.classes,
            label_scale=(info.target_mean, info.target_std),
            batch_transform=module.model.packer, batch_size=batch_size)
        return cls(module, datamodule)

    # -- predictions ---------------------------------------------------------
    def predict(self, ids: list | pd.Series | pd.DataFrame,
                at: str | pd.Timestamp) -> pd.DataFrame:
        """Predictions for the entities ``ids`` (the user's own key values, or
        a DataFrame with the entity table's key column) at time ``at``:
        ``[id, timestamp, prediction]`` (plus probability for multiclass;
        rank and item for recommendation)."""
        seeds = self._seeds(ids, at)
        outputs = self._run(seeds)
        return prediction_frame(self.module, self, seeds, outputs)

    @torch.no_grad()
    def recommend(self, ids: list | pd.Series | pd.DataFrame, at: str | pd.Timestamp,
                  k: int = 10) -> pd.DataFrame:
        """The ``k`` best items per entity: ``[id, rank, item, score]``. When the
        model excludes seen items, none the entity had by ``at`` is among them
        (an entity that had nearly every item gets fewer than ``k`` rows)."""
        if self.info.task_type != types.RECOMMENDATION:
            raise ValueError("recommend() needs a recommendation model; this one is a "
                             f"{self.info.task_type} model")
        seeds = self._seeds(ids, at)
        scores = []
        for batch in self.datamodule.loader(seeds):
            scores.append(ranked_scores(self.module.model, self.module.model(batch.inputs),
                                        batch, self.module.exclude_seen,
                                        self.module.popularity_boost))
        top = torch.cat(scores).topk(min(k, self.graph[self.info.item_type].num_nodes), dim=1)
        items = self.graph.key_index[self.info.item_type]
        id_col = seeds.ids.name or "id"
        frame = pd.DataFrame({
            id_col: seeds.ids.repeat(top.indices.size(1)).to_numpy(),
            "rank": list(range(1, top.indices.size(1) + 1)) * len(seeds),
            "item": items.take(top.indices.reshape(-1).numpy()),
            "score": top.values.reshape(-1).numpy(),
        })
        return frame[frame["score"] > float("-inf")].reset_index(drop=True)

    def evaluate(self, split: str = "test",
                 plots: str | Path | None = None) -> dict[str, float]:
        """The task's metrics on ``split`` of this predictor's database, over
        the seeds ``rdl test`` scores (the training run's ``max_seeds``
        subset, when it had one); with ``plots``, also the split's pictures
        (ROC and precision-recall curves, predicted vs true, or hit rate by
        rank) as PNGs in that folder, named ``test_*.png`` whatever the split."""
        parts = self.datamodule
        datamodule = RelationalDataModule.from_parts(
            parts.run, parts.sampling(), self.db, self.graph, classes=self.info.classes,
            label_scale=parts.label_scale(), batch_transform=parts.batch_transform,
            batch_size=parts.batch_size, test_split=split)
        callbacks = [] if plots is None else [RunPlots(dirpath=str(plots))]
        with lightning_info_muted():
            trainer = L.Trainer(logger=False, enable_progress_bar=False,
                                enable_model_summary=False, callbacks=callbacks)
            results = trainer.test(self.module, datamodule=datamodule, verbose=False)[0]
        return {k.removeprefix("test_").replace("_at_", "@"): float(v) for k, v in results.items()}

    def explain(self, id, at: str | pd.Timestamp, item=None,
                plot: str | Path | None = None) -> pd.DataFrame:
        """Which tables, columns and rows of the subgraph the model saw for
        entity ``id`` at ``at`` moved its prediction, and by how much
        (occlusion; see :func:`rdl.predict.explain.explain`). ``plot``: also
        write a bar chart of the largest effects to this PNG file."""
        frame = explain(self, id, at, item=item)
        if plot is not None:
            plot_explanation(frame, path=plot)
        return frame

    # -- plumbing ------------------------------------------------------------
    def _seeds(self, ids: list | pd.Series | pd.DataFrame, at: str | pd.Timestamp) -> Seeds:
        at = pd.Timestamp(at)
        start, end = self.db.min_time, self.db.max_time
        if start is not None and not (start <= at <= end):
            raise ValueError(f"at={at} is outside the data, which spans {start} .. {end}")
        key = self.graph.key_index[self.info.seed_type].name
        if isinstance(ids, pd.DataFrame):
            if key not in ids.columns:
                raise ValueError(
                    f"ids is a DataFrame without a {key!r} column, the key of table "
                    f"{self.graph.table_of[self.info.seed_type]!r}; its columns are "
                    f"{list(ids.columns)}. Pass a DataFrame with that column, or the ids")
            ids = ids[key]
        ids = pd.Series(list(ids), name=key)
        if ids.empty:
            raise ValueError("ids is empty: give at least one entity id")
        node = node_indices(self.graph, self.info.seed_type, ids, "entity")
        self._warn_if_not_begun(ids, node, at)
        times = pd.Series([at] * len(ids), name="timestamp")
        return Seeds(node, to_unix_seconds(times), torch.zeros(len(ids)), None, ids, times)

    def _warn_if_not_begun(self, ids: pd.Series, node: torch.Tensor, at: pd.Timestamp) -> None:
        """A warning naming the ids whose entity row is dated after ``at``: a row
        exists from its time on, so training never had such a seed."""
        table = self.db[self.graph.table_of[self.info.seed_type]]
        if table.time_column is None:
            return
        began = pd.Series(table.df[table.time_column].to_numpy()[node.numpy()])
        late = (began > at).to_numpy()
        if late.any():
            shown = ", ".join(str(i) for i in ids[late].unique()[:5])
            warnings.warn(
                f"{int(late.sum())} of {len(ids)} ids are dated after at={at} by "
                f"{table.name}.{table.time_column} (e.g. {shown}): a {table.name} row exists from "
                "its time on, so no training seed was one before it, and these predictions "
                "are outside what the model learned from", stacklevel=4)

    @torch.no_grad()
    def _run(self, seeds: Seeds) -> list[dict]:
        blend, features = self.module.blend, self.module.baseline_features
        if blend is not None and seeds.prior is None:
            seeds.prior = blend.prior(self.db, self.info.make_task(), seeds)
        if features is not None and seeds.features is None:
            seeds.features = features.compute(self.db, self.info.make_task(), seeds)
        return [self.module.predict_step(batch, 0) for batch in self.datamodule.loader(seeds)]

