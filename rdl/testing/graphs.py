"""A synthetic shop graph with every stype, missing values and a table without
features, and temporal mini-batches of it: for the model's tests and
``scripts/bench_compile.py``, without a database."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import torch
import torch_frame
from torch_frame.data import Dataset
from torch_geometric.data import HeteroData

from rdl.graph.materialize import column_stats, feature_frame

START = np.datetime64("2020-01-01T00:00:00", "s")


def _frame(df: pd.DataFrame, stypes: dict[str, str]):
    frame = feature_frame(df, stypes)
    dataset = Dataset(frame, {c: torch_frame.stype(s) for c, s in stypes.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset.materialize(col_stats=column_stats(frame, stypes))
    return dataset.tensor_frame, dataset.col_stats


def synthetic_graph(num_customers: int = 200, num_items: int = 50,
                    num_transactions: int = 2000, num_stores: int = 5,
                    days: int = 365, seed: int = 0) -> HeteroData:
    r"""A graph shaped like :func:`rdl.graph.build_graph` output.

    * ``customers`` (static): numerical ``age`` (10% NaN), categorical
      ``region`` (some missing), embedding ``profile`` (4 dims);
    * ``items`` (static): numerical ``price`` (NaN and ``inf``), categorical
      ``category``, multicategorical ``tags``, timestamp ``launched`` (some
      missing);
    * ``transactions`` (timed): numerical ``amount``, categorical ``channel``,
      foreign keys to customers, items and stores;
    * ``stores``: no feature columns.

    The label-like signal: a transaction's ``amount`` grows with its item's
    ``price`` and its customer's ``age``.
    """
    rng = np.random.default_rng(seed)
    data = HeteroData()
    data.col_stats_dict = {}

    age = rng.normal(40, 12, num_customers)
    age[rng.random(num_customers) < 0.1] = np.nan
    region = rng.choice(["north", "south", "east", "west", None], num_customers)
    profile = [list(v) for v in rng.normal(size=(num_customers, 4))]
    customers = pd.DataFrame({"age": age, "region": region, "profile": profile})
    data["customers"].num_nodes = num_customers
    data["customers"].tf, data.col_stats_dict["customers"] = _frame(
        customers, {"age": "numerical", "region": "categorical", "profile": "embedding"})

    price = rng.lognormal(3, 1, num_items)
    price[rng.random(num_items) < 0.1] = np.nan
    price[rng.random(num_items) < 0.05] = np.inf
    tags = [list(rng.choice(["a", "b", "c", "d", "e"], rng.integers(0, 4), replace=False))
            for _ in range(num_items)]
    age_s = rng.integers(0, 3 * 365 * 86400, num_items).astype("timedelta64[s]")
    launched = pd.Series(START - age_s)
    launched[rng.random(num_items) < 0.1] = pd.NaT
    items = pd.DataFrame({"price": price, "category": rng.choice(list("pqrs"), num_items),
                          "tags": tags, "launched": launched})
    data["items"].num_nodes = num_items
    data["items"].tf, data.col_stats_dict["items"] = _frame(
        items, {"price": "numerical", "category": "categorical", "tags": "multicategorical",
                "launched": "timestamp"})

    customer = rng.integers(0, num_customers, num_transactions)
    item = rng.zipf(1.5, num_transactions) % num_items
    store = rng.integers(0, num_stores, num_transactions)
    time = np.sort(rng.integers(0, days * 86400, num_transactions)) + START.astype(np.int64)
    amount = (np.nan_to_num(price[item], nan=20.0, posinf=20.0)
              * (1 + np.nan_to_num(age[customer], nan=40) / 100))
    transactions = pd.DataFrame({"amount": amount + rng.normal(0, 1, num_transactions),
                                 "channel": rng.choice(["web", "shop"], num_transactions)})
    data["transactions"].num_nodes = num_transactions
    data["transactions"].time = torch.from_numpy(time)
    data["transactions"].tf, data.col_stats_dict["transactions"] = _frame(
        transactions, {"amount": "numerical", "channel": "categorical"})
    data["stores"].num_nodes = num_stores

    rows = torch.arange(num_transactions)
    for column, parent, ids in (("customer", "customers", customer), ("item", "items", item),
                                ("store", "stores", store)):
        parents = torch.from_numpy(ids.astype(np.int64))
        data["transactions", f"f2p_{column}", parent].edge_index = torch.stack([rows, parents])
        data[parent, f"rev_f2p_{column}", "transactions"].edge_index = torch.stack([parents, rows])
    data.validate()
    return data


def sample_batches(data: HeteroData, seed_type: str, batch_sizes: list[int],
                   num_neighbors: list[int], transform=None, seed: int = 0) -> list:
    r"""One temporal mini-batch per entry of :obj:`batch_sizes` (seeds drawn at
    random among the :obj:`seed_type` nodes, at their own times when the type is
    timed), from :class:`~rdl.sampling.TemporalNeighborSampler` through
    :class:`~torch_geometric.loader.NodeLoader`, passed through :obj:`transform`."""
    from torch_geometric.loader import NodeLoader

    from rdl.sampling import TemporalNeighborSampler

    sampler = TemporalNeighborSampler(data, num_neighbors, seed=seed)
    g = torch.Generator().manual_seed(seed)
    store = data[seed_type]
    batches = []
    for size in batch_sizes:
        seeds = torch.randperm(store.num_nodes, generator=g)[:size]
        time = store.time[seeds] if "time" in store else None
        loader = NodeLoader(data, node_sampler=sampler, input_nodes=(seed_type, seeds),
                            input_time=time, batch_size=size, transform=transform)
        batches.append(next(iter(loader)))
    return batches
