"""The LightningDataModule: database + task -> graph, seeds and temporal loaders."""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import lightning as L
from lightning.pytorch.utilities import rank_zero_info
import pandas as pd
from torch import Tensor
from torch_geometric.data import HeteroData
from torch_geometric.loader import NodeLoader

from rdl.db import Database
from rdl.graph import build_graph, load_graph, safe_name, save_graph
from rdl.graph.fingerprint import (db_feature_columns, db_links, graph_links, link_mismatch,
                                   schema_mismatch, spec_feature_columns)
from rdl.graph.rare_categories import forget_rare_categories
from rdl.nn.batch import BatchPacker, PackedBatch, without_features
from rdl.sampling import NUM_WINDOWS, SamplingSettings, TemporalNeighborSampler, TemporalNodeStats
from rdl.sampling.neighbors import expand_ranges
from rdl.tasks import SPLITS, Task, parse_timedelta, repeat_rate, task_types as types
from rdl.tasks.dormant import seed_hints
from rdl.tasks.label_table import describe_split
from rdl.tasks.leakage import GUARD_MODES, GuardMode, guard, reads_train_labels
from rdl.tasks.run_data import RunData
from rdl.train.distributed import ShardSampler, share_cpu_threads
from rdl.train.past_labels import attach_past_labels
from rdl.train.popularity import PopularityIndex, SeedPopularity
from rdl.train.seeds import Seeds, make_seeds
from rdl.train.seen import SeenIndex, SeenItems


class RelationalDataModule(L.LightningDataModule):
    r"""Reads the database, builds (or loads from cache) the graph and the
    task's seeds, and serves temporal mini-batches from rdl's sampler.

    Under DDP (``trainer.strategy: ddp``) every process loads the same graph and
    seeds and samples its own mini-batches from its shard of the seeds (see
    :mod:`rdl.train.distributed`); ``batch_size`` is per process, so the
    batch of one step is ``batch_size`` times the number of processes.

    Args:
        source (str): Database URL, file, folder or bundled dataset name.
        task (Task): What to predict (the ``task:`` section of a config).
        schema (str, optional): YAML schema file. (default: :obj:`None`)
        sql_schema (str, optional): Database namespace to read.
            (default: :obj:`None`)
        num_neighbors (list[int]): Fan-out per hop. (default: ``[16, 16]``)
        strategy (str): ``"uniform"`` or ``"last"`` neighbour sampling.
            (default: ``"last"``)
        shared_fanout (bool or str): Each hop's fan-out is a budget per node,
            shared by the edge types that bring it many neighbours (an even
            share each, what one leaves going to the others), instead of a
            count per edge type. ``"auto"`` shares only where five or more
            edge types bring a node type many neighbours (an entity with many
            event tables), ``true`` wherever two do, ``false`` never.
            (default: ``"auto"``)
        batch_size (int): Seeds per mini-batch and process.
            (default: :obj:`256`)
        min_steps_per_epoch (int): Optimizer steps per training epoch at
            least: a split with fewer than ``min_steps_per_epoch *
            batch_size`` seeds per process is trained on in several passes
            per epoch, each in a new order, every seed equally often (plus
            or minus one), so that a few hundred seeds still get enough
            steps for the learning-rate schedule and enough training between
            validation checks. ``0`` trains on each seed once per epoch.
            (default: :obj:`20`)
        num_workers (int): Loader worker processes; sampling overlaps
            training when > 0. (default: :obj:`0`)
        exclude_columns (dict, optional): Table -> feature columns the model
            must not see, besides the task's target (e.g. columns that are
            only filled in after the event predicted). (default: :obj:`None`)
        leakage_guard (str): ``"warn"`` about feature columns that may give
            the label away (see :mod:`rdl.tasks.leakage`), ``"exclude"``
            them too, or ``"off"``. (default: ``"warn"``)
        max_seeds (int, optional): Keep at most this many seeds per split (a
            random subset, for quick runs). (default: :obj:`None`)
        graph_file (str, optional): A graph file (see
            :func:`rdl.graph.save_graph`): memory-mapped when it exists and
            still matches the database, else built, saved there once per
            machine and mapped back, so loader workers and DDP processes
            share one copy of the graph. (default: :obj:`None`, the graph is
            held in each process's memory)
        cache_dir (str, optional): Where materialised features are cached.
            (default: ``$RDL_HOME/cache``)
        predict_split (str): Split ``rdl predict`` predicts for.
            (default: ``"test"``)
        test_split (str): Split ``rdl test`` evaluates (its metrics and
            pictures are named ``test_*`` whichever it is). (default: ``"test"``)
        stat_windows (list[str], optional): The three windows of the temporal
            neighbour counts that models with ``temporal_stats`` see (e.g.
            ``["7d", "30d", "120d"]``). (default: :obj:`None`: a quarter of,
            one and four times the task's horizon; for event-level tasks a
            365th, 52nd and 12th of the data's time span)
        seed (int): Seed for subsetting and sampling. (default: :obj:`0`)
        time_column_features (bool): Give the model each table's time column
            as a feature too, i.e. its calendar parts (year, month, day,
            weekday, hour, minute, second); every sampled row carries its age
            at the seed time either way. ``false`` drops them: on the eleven
            bundled tasks (3 seeds) it helped six (the wide shop +0.2 AUROC,
            no-repeat churn +0.6, recommendation MAP +3-5%) and cost four
            (fraud -0.3, the 1k-customer shop -0.2, plane_destinations
            -0.8%, airport_departures -0.08 r2), so it is an option, not the
            default (benchmarks/REPORT.md). (default: :obj:`True`)
        entity_category_min_rows (int): The categories of the task's entity
            table that fewer rows hold are unseen to the model (see
            :mod:`rdl.graph.rare_categories`), so that it cannot learn
            entities by name (an id, a full name, a birth town); the
            LightGBM of the blend and of ``model.baseline_features`` reads
            them as missing. ``1`` keeps every category. (default: :obj:`1`)
    """

    def __init__(
        self,
        source: str,
        task: Task,
        schema: str | None = None,
        sql_schema: str | None = None,
        num_neighbors: list[int] | None = None,
        strategy: str = "last",
        shared_fanout: bool | Literal["auto"] = "auto",
        batch_size: int = 256,
        min_steps_per_epoch: int = 20,
        num_workers: int = 0,
        exclude_columns: dict[str, list[str]] | None = None,
        leakage_guard: GuardMode = "warn",
        max_seeds: int | None = None,
        graph_file: str | None = None,
        cache_dir: str | None = None,
        predict_split: str = "test",
        test_split: str = "test",
        seed: int = 0,
        stat_windows: list[str] | None = None,
        time_column_features: bool = True,
        entity_category_min_rows: int = 1,
    ) -> None:
        super().__init__()
        self.run = RunData(source, task, schema, sql_schema, exclude_columns, max_seeds, seed,
                           time_column_features)
        self.num_neighbors = num_neighbors or [16, 16]
        self.strategy = strategy
        self.shared_fanout = shared_fanout
        # Checked now, not at the first batch.
        SamplingSettings(self.num_neighbors, strategy, shared_fanout=shared_fanout)
        self.batch_size = batch_size
        self.min_steps_per_epoch = min_steps_per_epoch
        self.num_workers = num_workers
        if leakage_guard not in GUARD_MODES:
            raise ValueError(f"leakage_guard={leakage_guard!r} is not one of {list(GUARD_MODES)}")
        self.leakage_guard = leakage_guard
        self.exclusions = self.run.exclude_columns  # plus what the guard excludes, once run
        self.graph_file = graph_file
        self.cache_dir = cache_dir
        for name, split in (("predict_split", predict_split), ("test_split", test_split)):
            if split not in SPLITS:
                raise ValueError(f"{name}={split!r} is not one of {list(SPLITS)}")
        self.predict_split = predict_split
        self.test_split = test_split
        self.stat_windows = stat_windows
        if (isinstance(entity_category_min_rows, bool)
                or not isinstance(entity_category_min_rows, int) or entity_category_min_rows < 1):
            raise ValueError(f"entity_category_min_rows={entity_category_min_rows!r} must be a "
                             "whole number >= 1")
        self.entity_category_min_rows = entity_category_min_rows
        self.forgotten_categories: dict[str, int] = {}
        self.db: Database | None = None
        self.graph: HeteroData | None = None
        self.seeds: dict[str, Seeds] = {}
        self._train_labels: pd.DataFrame | None = None  # computed for the leakage guard
        self.label_lines: dict[str, str] = {}  # split -> a one-line summary of its labels
        self.seed_lines: list[str] = []  # hints on the training seeds (rdl.tasks.dormant)
        self.classes: list | None = None
        self.batch_transform: Callable | None = None
        self.repeat_rate: float | None = None  # recommendation: set with the train seeds
        self._seen: SeenIndex | None = None
        self._popularity: PopularityIndex | None = None
        self._label_scale: tuple[float, float] | None = None
        self._stat_seconds: list[int] | None = None

    @classmethod
    def from_parts(cls, run: RunData, sampling: SamplingSettings, db: Database,
                   graph: HeteroData, *, classes: list | None, label_scale: tuple[float, float],
                   batch_transform: Callable | None, batch_size: int = 256,
                   test_split: str = "test") -> RelationalDataModule:
        """A data module over a database already read and a graph already
        built (a trained model's, as the Predictor has them): the seeds,
        loaders and seen items of training, with the training run's label
        scale and count windows instead of ones measured on ``db``."""
        datamodule = cls(run.source, run.task, run.schema, run.sql_schema,
                         num_neighbors=list(sampling.num_neighbors), strategy=sampling.strategy,
                         shared_fanout=sampling.shared_fanout,
                         batch_size=batch_size, exclude_columns=run.exclude_columns,
                         leakage_guard="off", max_seeds=run.max_seeds, seed=run.seed,
                         test_split=test_split, min_steps_per_epoch=0,
                         time_column_features=run.time_column_features)
        run.task.check(db)
        datamodule.db, datamodule.graph, datamodule.classes = db, graph, classes
        datamodule.batch_transform = batch_transform
        datamodule._label_scale = label_scale
        datamodule._stat_seconds = list(sampling.stat_windows or [])
        return datamodule

    @property
    def task(self) -> Task:
        return self.run.task

    @property
    def source(self) -> str:
        return self.run.source

    @property
    def seed(self) -> int:
        return self.run.seed

    def sampling(self) -> SamplingSettings:
        """How this module samples subgraphs (what a checkpoint stores)."""
        return SamplingSettings(self.num_neighbors, self.strategy, self.stat_window_seconds(),
                                self.shared_fanout)

    # -- building ------------------------------------------------------------
    def prepare_graph(self) -> HeteroData:
        """Reads the database and builds the graph once; later calls reuse it.

        The one place the graph is loaded: under DDP every process calls it
        in :meth:`setup`, after :meth:`prepare_data` has filled the feature
        cache."""
        if self.graph is None:
            from rdl.home import rdl_home

            self.db = self.run.connect()
            self.task.check(self.db)
            if self.leakage_guard != "off" and reads_train_labels(self.task):
                self._train_labels = self.task.table(self.db, "train")  # read by both
            self.exclusions = guard(self.db, self.task, self.leakage_guard,
                                    self.run.exclude_columns, train_labels=self._train_labels)
            self.graph = self._mapped_graph()
            if self.graph is None:
                cache = Path(self.cache_dir) if self.cache_dir else rdl_home() / "cache"
                self.graph = build_graph(
                    self.db, exclude_columns=self.excluded_columns(),
                    cache_dir=cache / _cache_name(self.source),
                )
                if self.graph_file is not None:
                    save_graph(self.graph, self.graph_file)
                    self.graph = load_graph(self.graph_file)  # shared pages, not a private copy
            if self.entity_category_min_rows > 1:
                self.forgotten_categories = forget_rare_categories(
                    self.graph, self.entity_type, self.entity_category_min_rows)
            if self.task.task_type == types.MULTICLASS:
                self.classes = self.task.classes(self.db)
        return self.graph

    def _mapped_graph(self) -> HeteroData | None:
        """The graph file, memory-mapped, if it was built from this database
        with these exclusions; ``None`` (with a warning) when it is stale or
        corrupt."""
        if self.graph_file is None or not Path(self.graph_file).is_file():
            return None
        try:
            graph = load_graph(self.graph_file)
        except ValueError as exc:  # not a graph file, or changed since written
            warnings.warn(f"{exc}; rebuilding it", stacklevel=2)
            return None
        for table in self.db:
            nt = safe_name(table.name)
            if graph[nt].num_nodes != len(table):
                return self._stale(f"table {table.name!r} has {len(table)} rows, the file "
                                   f"{graph[nt].num_nodes}")
        stored = spec_feature_columns({nt: graph[nt].tf.col_names_dict
                                       for nt in graph.node_types if "tf" in graph[nt]})
        current = db_feature_columns(self.db, self.excluded_columns())
        mismatch = (schema_mismatch({**dict.fromkeys(current, []), **stored}, current)
                    or link_mismatch(db_links(self.db), graph_links(graph.edge_types)))
        if mismatch is not None:
            return self._stale(mismatch)
        return graph

    def _forgotten_line(self) -> str:
        columns = ", ".join(f"{column} {count:,}" for column, count
                            in sorted(self.forgotten_categories.items()))
        k = self.entity_category_min_rows
        return (f"entity_category_min_rows: {k}: categories held by fewer than {k} "
                f"{self.task.entity_table} rows are unseen ({columns}), so the model cannot "
                "learn entities by name")

    def _stale(self, why: str) -> None:
        warnings.warn(f"{self.graph_file} does not match {self.source}: {why}; rebuilding it",
                      stacklevel=3)

    def excluded_columns(self) -> dict[str, list[str]]:
        """What the model does not read: the task's hidden target, the
        configured and guarded exclusions and, by default, the time columns."""
        return self.run.model_exclusions(self.db, self.exclusions)

    def data_description(self) -> dict:
        """The run's data (source, schema file content, every exclusion) and
        how it samples, as plain values: what a checkpoint stores so that
        predictions read and sample alike."""
        run = dataclasses.replace(self.run, exclude_columns=self.exclusions)
        return {**run.to_plain(), **self.sampling().to_plain()}

    def label_scale(self) -> tuple[float, float]:
        """Mean and standard deviation of the training labels of a regression
        task (``(0, 1)`` otherwise): regression targets are learned, and past
        labels shown, standardised by them."""
        if self._label_scale is None:
            self._label_scale = (0.0, 1.0)
            if self.task.task_type == types.REGRESSION:
                labels = self.split_seeds("train").label
                self._label_scale = (float(labels.mean()), float(labels.std().clamp(min=1e-6)))
        return self._label_scale

    def stat_window_seconds(self) -> list[int]:
        """The windows of the temporal neighbour counts, in seconds."""
        if self._stat_seconds is None:
            self._stat_seconds = self._resolve_stat_windows()
        return self._stat_seconds

    def _resolve_stat_windows(self) -> list[int]:
        if self.stat_windows is not None:
            if len(self.stat_windows) != NUM_WINDOWS:
                raise ValueError(f"data.stat_windows needs {NUM_WINDOWS} durations such as "
                                 f"['7d', '30d', '120d'] (got {self.stat_windows})")
            start = self.task.reference_time
            return [int(((start + parse_timedelta(w, "stat_windows")) - start).total_seconds())
                    for w in self.stat_windows]
        horizon = self.task.horizon
        if horizon is not None:
            scales = [horizon / 4, horizon, horizon * 4]
        else:
            self.prepare_graph()
            span = self.db.max_time - self.db.min_time if self.db.min_time is not None else None
            span = span if span is not None and span > pd.Timedelta(0) else pd.Timedelta(days=365)
            scales = [span / 365, span / 52, span / 12]
        return [max(int(scale.total_seconds()), 1) for scale in scales]

    @property
    def entity_type(self) -> str:
        return safe_name(self.task.entity_table)

    @property
    def item_type(self) -> str | None:
        return safe_name(self.task.item_table) if self.task.item_table else None

    def split_seeds(self, split: str) -> Seeds:
        """Seeds of ``split`` (``train``, ``val`` or ``test``), built on first use."""
        if split not in self.seeds:
            graph = self.prepare_graph()
            table = self.run.labels(self.db, split,
                                    table=self._train_labels if split == "train" else None)
            if split == "train":
                self._train_labels = None
            self.label_lines[split] = describe_split(table, self.task.task_type, split)
            self.seeds[split] = make_seeds(
                table, graph, self.entity_type, self.task.task_type, self.classes, self.item_type,
            )
            if split == "train":
                self.seed_lines = seed_hints(self.task, self.db, table)
            if split == "train" and self.task.task_type == types.RECOMMENDATION:
                self.repeat_rate = repeat_rate(self.task, self.db, table).rate
        return self.seeds[split]

    def seen_index(self) -> SeenIndex | None:
        """Recommendation: the items each entity had by any time, built once."""
        if self.task.task_type != types.RECOMMENDATION:
            return None
        if self._seen is None:
            graph = self.prepare_graph()
            self._seen = SeenIndex.from_task(self.task, self.db, graph, self.entity_type,
                                             self.item_type)
        return self._seen

    def popularity_index(self) -> PopularityIndex | None:
        """Recommendation: every item's rows by time, to count what is
        popular before a seed (:mod:`rdl.train.popularity`), built once."""
        if self.task.task_type != types.RECOMMENDATION:
            return None
        if self._popularity is None:
            self._popularity = PopularityIndex.from_task(self.task, self.db,
                                                         self.prepare_graph(), self.item_type)
        return self._popularity

    def prepare_data(self) -> None:
        """Runs in one process per machine before any process's
        :meth:`setup`: builds the graph there, so that the feature cache is
        written once and the other processes only read it."""
        self.prepare_graph()

    def setup(self, stage: str | None = None) -> None:
        trainer = self.trainer
        if trainer is not None and trainer.strategy.root_device.type == "cpu":
            share_cpu_threads(trainer.num_devices)  # processes on this machine
        self.prepare_graph()
        wanted = {"fit": ("train", "val"), "validate": ("val",), "test": (self.test_split,),
                  "predict": (self.predict_split,)}
        for split in wanted.get(stage or "", SPLITS):
            self.split_seeds(split)
        if stage == "fit":  # what the model will learn from, before it does
            if self.task.split_choice is not None:
                rank_zero_info(self.task.split_choice)
            for split in wanted["fit"]:
                rank_zero_info(self.label_lines[split])
            for line in self.seed_lines:
                rank_zero_info(line)
            if self.forgotten_categories:
                rank_zero_info(self._forgotten_line())
        elif stage in ("validate", "test"):  # what the metrics are measured on
            for split in wanted[stage]:
                rank_zero_info(self.label_lines[split])

    # -- loaders -------------------------------------------------------------
    def loader(self, seeds: Seeds, train: bool = False, pack: bool = True) -> NodeLoader:
        """A NodeLoader over this process's shard of ``seeds``, driven by
        rdl's temporal sampler: the one loader of training, evaluation and
        the Predictor. ``train`` reshuffles every epoch and gives all
        processes equally many seeds; otherwise every seed is served exactly
        once, in order. Batches are :class:`LabeledBatch` es carrying each
        seed's row in ``seeds``; ``pack=False`` leaves their inputs the
        sampled ``HeteroData`` (for occlusion)."""
        graph = self.prepare_graph()
        rank, world_size = self._process()
        transform = self.model_transform()
        sampler = TemporalNeighborSampler(graph, self.num_neighbors, strategy=self.strategy,
                                          shared_fanout=self.shared_fanout, seed=self.seed)
        if getattr(transform, "label_type", None) and "past_label" not in graph[self.entity_type]:
            attach_past_labels(graph, self.db, self.task, self.entity_type,
                               *self.label_scale())
        stats = None
        if getattr(transform, "stats_widths", None):  # the model reads them
            stats = TemporalNodeStats(sampler.index, self.stat_window_seconds())
        data = graph
        if pack and isinstance(transform, BatchPacker):  # gather features once, in the packer
            data, frames = without_features(graph)
            transform = transform.gathering_from(frames)
        return NodeLoader(
            data, node_sampler=sampler, input_nodes=(self.entity_type, seeds.node),
            input_time=seeds.time, batch_size=self.batch_size,
            sampler=ShardSampler(len(seeds), rank, world_size, train=train, seed=self.seed,
                                 min_seeds=self.min_steps_per_epoch * self.batch_size),
            num_workers=self.num_workers, persistent_workers=self.num_workers > 0,
            transform=AttachLabels(seeds, self.entity_type, transform if pack else None, stats,
                                   self.seen_index(), self.popularity_index()),
        )

    def model_transform(self) -> Callable | None:
        """The model's batch transform (its packer): the one given to
        :meth:`from_parts`, else the one of the model being trained, which
        Lightning builds before it asks for loaders."""
        if self.batch_transform is not None:
            return self.batch_transform
        module = getattr(self.trainer, "lightning_module", None)
        return getattr(module, "batch_transform", None)

    def split_loader(self, split: str) -> NodeLoader:
        """The loader of ``split``; evaluated splits need a seed per process
        (a process without any could not take part in reducing the metrics)."""
        seeds = self.split_seeds(split)
        _, world_size = self._process()
        if split != "train" and len(seeds) < world_size:
            raise ValueError(f"The {split} split has {len(seeds)} seeds, fewer than the "
                             f"{world_size} processes; run it in fewer processes (trainer.devices, "
                             "trainer.num_nodes)")
        return self.loader(seeds, train=split == "train")

    def train_dataloader(self) -> NodeLoader:
        return self.split_loader("train")

    def val_dataloader(self) -> NodeLoader:
        return self.split_loader("val")

    def test_dataloader(self) -> NodeLoader:
        return self.split_loader(self.test_split)

    def predict_dataloader(self) -> NodeLoader:
        return self.split_loader(self.predict_split)

    def _process(self) -> tuple[int, int]:
        """This process's global rank and the number of processes."""
        if self.trainer is None:
            return 0, 1
        return self.trainer.global_rank, self.trainer.world_size


@dataclass
class LabeledBatch:
    r"""What the LightningModule receives: the model input and the labels.

    Args:
        inputs: The sampled mini-batch after the model's batch transform.
        y (Tensor): Label per seed, or item index per positive pair.
        position (Tensor): Row of each seed in its split's seeds.
        y_seed (Tensor, optional): Seed of each positive pair (recommendation).
        seen (SeenItems, optional): The items each seed's entity already had
            (recommendation).
        prior (Tensor, optional): Each seed's :attr:`Seeds.prior`.
        popular (SeedPopularity, optional): What was popular at each seed's
            time (recommendation).
    """

    inputs: Any
    y: Tensor
    position: Tensor
    y_seed: Tensor | None = None
    seen: SeenItems | None = None
    prior: Tensor | None = None
    popular: SeedPopularity | None = None

    @property
    def num_seeds(self) -> int:
        return self.position.numel()


class AttachLabels:
    """Loader transform: picks the batch's labels (and, given a
    :class:`SeenIndex` and a :class:`PopularityIndex`, each seed's
    already-seen items and a handle on what was popular), adds the temporal
    neighbour statistics if given, and applies the model's own batch
    transform (then hands a packed batch its seeds' :attr:`Seeds.features`,
    if they have any), all inside the loader workers."""

    def __init__(self, seeds: Seeds, entity_type: str, then: Callable | None,
                 stats: TemporalNodeStats | None = None, seen: SeenIndex | None = None,
                 popularity: PopularityIndex | None = None) -> None:
        self.seeds = seeds
        self.entity_type = entity_type
        self.then = then
        self.stats = stats
        self.seen = seen
        self.popularity = popularity

    def __call__(self, batch: HeteroData) -> LabeledBatch:
        position = batch[self.entity_type].input_id
        if self.stats is not None:
            batch = self.stats(batch)
        inputs = self.then(batch) if self.then is not None else batch
        if self.seeds.features is not None and isinstance(inputs, PackedBatch):
            inputs.seed_features = self.seeds.features.index_select(0, position)
        seen = None if self.seen is None else self.seen.lookup(
            self.seeds.node.index_select(0, position), self.seeds.time.index_select(0, position))
        popular = None if self.popularity is None else SeedPopularity(
            self.popularity, self.seeds.time.index_select(0, position))
        if self.seeds.label_ptr is None:  # one label per seed (a Predictor's seeds: zeros)
            prior = self.seeds.prior
            return LabeledBatch(inputs, self.seeds.label.index_select(0, position), position,
                                seen=seen, popular=popular,
                                prior=None if prior is None else prior.index_select(0, position))
        start = self.seeds.label_ptr.index_select(0, position)
        count = self.seeds.label_ptr.index_select(0, position + 1) - start
        owner, slot = expand_ranges(start, count)
        y = self.seeds.label.index_select(0, slot)
        return LabeledBatch(inputs, y, position, owner, seen, popular=popular)


def _cache_name(source: str) -> str:
    import hashlib

    return hashlib.sha1(str(source).encode()).hexdigest()[:12]
