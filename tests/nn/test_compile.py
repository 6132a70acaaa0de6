"""Compiled models: no graph breaks, one compile for every batch size, same
outputs as eager.

Warm-up: N = 1 batch. The first call compiles; every later batch (1 seed,
empty edge types, node types with 0 or 1 nodes, more than 4096 nodes) must
reuse that graph, so the tests run with ``error_on_recompile`` after it.
"""
from __future__ import annotations

import pytest
import torch

from rdl.graph import build_graph
from rdl.nn import CompileStats, RelationalModel, compile_model
from rdl.nn.batch import without_features
from rdl.sampling import TemporalNodeStats
from rdl.sampling.graph_index import GraphIndex
from rdl.testing.graphs import sample_batches, synthetic_graph

WARMUP = 1


def run(model, batches, loss_fn, *, backend="inductor", atol=1e-4):
    r"""Trains the compiled model one step per batch, checking it against
    eager on every batch; returns the compile stats after the warm-up."""
    torch._dynamo.reset()
    compiled = compile_model(model, backend=backend)
    opt = torch.optim.SGD(model.parameters(), lr=torch.tensor(1e-2))
    start = CompileStats.now()
    stats = None
    for i, batch in enumerate(batches):
        if i == WARMUP:
            stats = CompileStats.now().since(start)
        with torch._dynamo.config.patch(error_on_recompile=i >= WARMUP):
            out = compiled(batch)
        with torch.no_grad():
            expected = model(batch)
        torch.testing.assert_close(out, expected, atol=atol, rtol=1e-4)
        opt.zero_grad()
        loss_fn(out, batch).backward()
        opt.step()
    after = CompileStats.now().since(start)
    assert after.graph_breaks == 0
    assert after.graphs == stats.graphs == 1, "recompiled after the warm-up"
    return after


def regression_loss(out, batch):
    return out.square().mean()


@pytest.fixture(scope="module")
def flights_graph(flights_db):
    return build_graph(flights_db)


def test_nycflights13_compiles_once_for_32_batches(flights_graph):
    torch.manual_seed(0)
    model = RelationalModel(flights_graph, seed_type="flights", task_type="binary",
                            channels=16, num_layers=2, temporal_stats=False)
    # Sizes from 1 seed to ~10k nodes per type (crossing 4096), in random order.
    sizes = [64, 1, 3, 512, 2, 17, 100, 1, 40, 7, 256, 5, 1, 90, 33, 2,
             11, 300, 4, 1, 60, 9, 128, 3, 21, 1, 75, 6, 200, 13, 2, 48]
    batches = sample_batches(flights_graph, "flights", sizes, [4, 4], transform=model.packer)
    assert max(b.gather["flights"].numel() for b in batches) > 4096
    assert min(min(e.size(1) for e in b.edge_index[1].values()) for b in batches) == 0
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    run(model, batches, lambda out, b: bce(out.squeeze(-1), (b.seed_time % 2).float()))


@pytest.fixture(scope="module")
def shop():
    return synthetic_graph()


CONFIGS = [
    dict(gnn="gat"), dict(gnn="hgt"), dict(encoder="resnet"), dict(encoder="fttransformer"),
    dict(task_type="multiclass", out_channels=3, shallow_types=["customers"]),
    dict(task_type="recommendation", item_type="items", rec_head="two_tower"),
    dict(task_type="recommendation", item_type="items", rec_head="idgnn"),
    dict(temporal_stats=True, past_labels=True, aggr="mean+max+sum+last"),
    dict(seed_features=5),
    dict(timestamp_ages=True),
    dict(numerical_encoding="piecewise"),
]


def _config_id(config):
    return "-".join(f"{k}={v}" if isinstance(v, bool) else str(v)
                    for k, v in config.items() if not isinstance(v, list))


@pytest.mark.parametrize("config", CONFIGS, ids=_config_id)
def test_every_option_traces_without_breaks_or_recompiles(shop, config):
    # TorchDynamo only (no AOTAutograd, no code generation): breaks and
    # recompiles show up here in seconds; test_slow_* runs Inductor.
    check_option(shop, config, backend="eager")


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS, ids=_config_id)
def test_slow_every_option_compiles_with_inductor(shop, config):
    check_option(shop, config, backend="inductor")


def check_option(shop, config, backend):
    torch.manual_seed(0)
    kwargs = dict(seed_type="transactions", task_type="regression", channels=8, heads=2,
                  temporal_stats=False)
    kwargs.update(config)
    model = RelationalModel(shop, **kwargs)
    transform = model.packer
    if config.get("temporal_stats"):
        shop = shop.clone()
        label = (torch.arange(shop["transactions"].num_nodes) % 3).float()
        shop["transactions"].past_label = label.masked_fill(label == 2, float("nan"))
        stats = TemporalNodeStats(GraphIndex.from_data(shop, "time"), [86_400, 7 * 86_400,
                                                                       30 * 86_400])
        transform = lambda batch: model.packer(stats(batch))  # noqa: E731
    batches = sample_batches(shop, "transactions", [16, 1, 40, 3, 2], [3, 3],
                             transform=transform)
    for batch in batches if config.get("seed_features") else []:
        batch.seed_features = torch.randn(batch.num_seeds, config["seed_features"])
    run(model, batches, regression_loss, backend=backend)


def test_features_gathered_from_the_graph_trace_like_copied_ones(shop):
    # rdl's loader samples the featureless graph and the packer gathers the
    # rows; a PyG loader over the whole graph hands it copied rows. Batches of
    # both, interleaved, must share one graph without breaks or recompiles.
    torch.manual_seed(0)
    model = RelationalModel(shop, seed_type="transactions", task_type="regression", channels=8,
                            temporal_stats=False)
    skeleton, frames = without_features(shop)
    gathering = model.packer.gathering_from(frames)
    sizes = [16, 1, 40, 3, 2, 7]
    copied = sample_batches(shop, "transactions", sizes, [3, 3], transform=model.packer)
    gathered = sample_batches(skeleton, "transactions", sizes, [3, 3], transform=gathering,
                              seed=1)
    run(model, [b for pair in zip(gathered, copied) for b in pair], regression_loss,
        backend="eager")

