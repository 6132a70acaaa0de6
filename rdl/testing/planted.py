"""A tiny shop whose label is planted in one column of one child table, and
a quick fit on it (a few seconds), for the tests of pictures and explanations."""
from __future__ import annotations

from pathlib import Path

import lightning as L
import numpy as np
import pandas as pd

from rdl.db.database import Database
from rdl.db.table import Table
from rdl.tasks import Task
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.callbacks import TaskCheckpoint

START = pd.Timestamp("2022-01-01")
PLANTED = {"orders": "amount", "visits": "seconds"}  # the child tables and their columns


def planted_shop(signal: str = "orders", num_customers: int = 300, days: int = 250,
                 seed: int = 0) -> Database:
    r"""``customers(age, region) --< orders(amount, channel)`` and ``--<
    visits(seconds)``, each customer ordering and visiting every 4 days on
    average. Half the customers are "big": the ``PLANTED[signal]`` column
    of their ``signal`` rows is about 90, of the others' about 50 (noise
    sd 10). Every other column is noise, the other table's planted-looking
    column included (about 70 for everyone), so only ``signal`` tells the
    label of :func:`planted_task` (whether the mean of the next 30 days is
    above 70)."""
    rng = np.random.default_rng(seed)
    big = rng.random(num_customers) < 0.5
    tables = {}
    for table, extra in (("orders", {"channel": "categorical"}), ("visits", {})):
        count = rng.poisson(days / 4, num_customers)
        owner = np.repeat(np.arange(num_customers), count)
        minutes = rng.integers(0, days * 24 * 60, owner.size)
        column = PLANTED[table]
        values = np.where(big[owner], 90.0, 50.0) if table == signal else np.full(owner.size, 70.0)
        at = START + pd.to_timedelta(minutes, unit="min")
        df = pd.DataFrame({f"{table[:-1]}_id": np.arange(owner.size),
                           "customer_id": [f"c{c}" for c in owner],
                           "at": at.astype("datetime64[ns]"),
                           column: values + rng.normal(0, 10, owner.size)})
        if extra:
            df["channel"] = rng.choice(["web", "app", "store"], owner.size)
        tables[table] = Table(table, df, f"{table[:-1]}_id", {"customer_id": "customers"}, "at",
                              {column: "numerical", **extra})
    customers = pd.DataFrame({"customer_id": [f"c{c}" for c in range(num_customers)],
                              "age": rng.integers(18, 80, num_customers).astype(float),
                              "region": rng.choice(["n", "s", "e", "w"], num_customers)})
    tables["customers"] = Table("customers", customers, "customer_id", {}, None,
                                {"age": "numerical", "region": "categorical"})
    return Database(tables, source="planted")


def planted_task(signal: str = "orders", regression: bool = False) -> Task:
    """Whether (or, for regression, how much) the mean of the planted column
    over the customer's next 30 days exceeds 70."""
    mean = f"AVG({signal}.{PLANTED[signal]}, 0, 30, days)"
    return Task(query=f"PREDICT {mean}{'' if regression else ' > 70'} "
                      "FOR EACH customers.customer_id",
                val_timestamp="2022-07-01", test_timestamp="2022-07-31", timedelta="15d")


def fit_planted(folder: Path, task: Task, signal: str = "orders", max_epochs: int = 8,
                callbacks: list | None = None, logger=False) -> tuple[L.Trainer, RelationalTask,
                                                                      RelationalDataModule]:
    """Saves :func:`planted_shop` under ``folder`` and trains a small model on
    ``task`` (under a second an epoch), checkpointing into
    ``folder/checkpoints``. ``last.ckpt`` is the trained model: the best
    epoch may be the first whose AUROC reaches 1, before the model settles."""
    L.seed_everything(0, verbose=False)
    planted_shop(signal).save(folder / "shop")
    datamodule = RelationalDataModule(str(folder / "shop"), task, num_neighbors=[8, 4],
                                      batch_size=128, max_seeds=1200,
                                      cache_dir=str(folder / "cache"))
    checkpoint = TaskCheckpoint(dirpath=str(folder / "checkpoints"))
    trainer = L.Trainer(max_epochs=max_epochs, logger=logger, log_every_n_steps=1,
                        callbacks=[checkpoint, *(callbacks or [])], enable_progress_bar=False,
                        enable_model_summary=False)
    # the graph alone: explain occludes the subgraph and holds the baseline's
    # aggregates fixed, which would carry part of the planted signal
    module = RelationalTask(net={"channels": 16}, blend_baseline=False, baseline_features=False)
    trainer.fit(module, datamodule)
    return trainer, module, datamodule
