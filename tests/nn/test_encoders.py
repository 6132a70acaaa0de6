"""Row encoders: PyTorch Frame parity, missing values, tables without
features, and errors naming the column and stype."""
from __future__ import annotations

import math

import pytest
import torch
import torch_frame
import torch_frame.nn as frame_nn
from hypothesis import given, settings
from hypothesis import strategies as hst
from torch_frame import stype
from torch_frame.data.stats import StatType

from rdl.nn import BatchPacker, FusedRowEncoder, HeteroEncoder, RelationalModel
from rdl.nn.stype_encoders import (
    EmbeddingEncoder,
    LinearEmbeddingEncoder,
    LinearEncoder,
    MultiCategoricalEmbeddingEncoder,
    StypeWiseFeatureEncoder,
    TimestampEncoder,
)
from rdl.nn.table_encoders import CategoricalTerm, FrameRowEncoder, PiecewiseNumericalTerm
from rdl.testing.graphs import sample_batches, synthetic_graph

C = 8


@pytest.fixture(scope="module")
def shop():
    return synthetic_graph()


@pytest.fixture(scope="module")
def batch(shop):
    packer = BatchPacker(shop.metadata(), "transactions", 2, dynamic=False)
    return sample_batches(shop, "transactions", [24], [3, 3], transform=packer)[0]


def _configured(encoder, st, stats):
    encoder.stype, encoder.out_channels, encoder.stats_list = st, C, stats
    return encoder


@pytest.mark.parametrize("ours,theirs,table,st", [
    (LinearEncoder, frame_nn.LinearEncoder, "transactions", stype.numerical),
    (EmbeddingEncoder, frame_nn.EmbeddingEncoder, "items", stype.categorical),
    (TimestampEncoder, frame_nn.TimestampEncoder, "items", stype.timestamp),
    (LinearEmbeddingEncoder, frame_nn.LinearEmbeddingEncoder, "customers", stype.embedding),
])
def test_stype_encoders_match_pytorch_frame(shop, ours, theirs, table, st):
    tf = shop[table].tf
    stats = [shop.col_stats_dict[table][c] for c in tf.col_names_dict[st]]
    feat = tf.feat_dict[st]
    theirs = _configured(theirs(), st, stats)
    ours = _configured(ours(), st, stats)
    ours.load_state_dict(theirs.state_dict(), strict=False)
    plain = feat.values if st == stype.embedding else feat
    if st == stype.numerical:
        plain = feat = torch.nan_to_num(feat, nan=1.0)
    torch.testing.assert_close(ours(plain), theirs(feat), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("make", [
    lambda stats: EmbeddingEncoder(C, stats, stype.categorical),  # resnet, fttransformer
    lambda stats: CategoricalTerm(stats, C),  # the default row encoder's
])
def test_categories_no_training_batch_held_read_as_missing_outside_training(make):
    """Categories 0-4 of a column: training sees 1 and 3 (and a missing value); in
    evaluation 1 and 3 keep their embeddings, the never-trained 0, 2 and 4 read as missing
    (the zero padding), as does a missing value."""
    stats = [{StatType.COUNT: (list("abcde"), [1] * 5)}]

    def encode(encoder, codes):
        return encoder(torch.tensor(codes).unsqueeze(1)).reshape(len(codes), C)

    encoder = make(stats)
    embeddings = encoder.emb.weight[1:6]
    every = [0, 1, 2, 3, 4, -1]
    encoder.train()
    torch.testing.assert_close(encode(encoder, [1, 3, -1, 3])[[0, 1, 3]],
                               embeddings[[1, 3, 3]])
    encoder.eval()
    got = encode(encoder, every)
    torch.testing.assert_close(got[[1, 3]], embeddings[[1, 3]])
    assert got[[0, 2, 4, 5]].abs().sum() == 0

    restored = make(stats).eval()
    restored.load_state_dict(encoder.state_dict())
    torch.testing.assert_close(encode(restored, every), got)
    before = {k: v for k, v in encoder.state_dict().items() if k != "trained"}
    older = make(stats).eval()
    older.load_state_dict(before)  # a checkpoint from before the mask read every category
    torch.testing.assert_close(encode(older, every)[:5], embeddings)


def test_multicategorical_encoder_matches_pytorch_frame_mean_bags(shop):
    tf = shop["items"].tf
    stats = [shop.col_stats_dict["items"][c] for c in tf.col_names_dict[stype.multicategorical]]
    theirs = _configured(frame_nn.MultiCategoricalEmbeddingEncoder(), stype.multicategorical, stats)
    ours = _configured(MultiCategoricalEmbeddingEncoder(), stype.multicategorical, stats)
    with torch.no_grad():
        ours.emb.weight.copy_(theirs.embs[0].weight)
    from rdl.nn.batch import frame_tensors
    index = torch.arange(tf.num_rows)
    feats = frame_tensors(tf, index)
    got = ours((feats["multicategorical"], feats["multicategorical_bag"],
                feats["multicategorical_weight"], tf.num_rows))
    torch.testing.assert_close(got, theirs(tf.feat_dict[stype.multicategorical]))


@pytest.mark.parametrize("encoder", ["mlp", "mlp-piecewise", "resnet", "fttransformer"])
def test_nan_and_inf_never_reach_the_loss(shop, batch, encoder):
    torch.manual_seed(0)
    encoder, _, numerical = encoder.partition("-")
    model = RelationalModel(shop, seed_type="transactions", task_type="regression",
                            channels=C, encoder=encoder, heads=2, temporal_stats=False,
                            numerical_encoding=numerical or "linear")
    feats = batch.features["items"]
    price = feats["numerical"].clone()
    price[::2] = float("nan")
    price[1::4] = float("inf")
    price[3::4] = float("-inf")
    feats_bad = dict(feats, numerical=price)
    features = dict(batch.features, items=feats_bad)
    features["transactions"] = dict(features["transactions"],
                                    numerical=torch.full_like(features["transactions"]["numerical"],
                                                              float("nan")))
    bad = type(batch)(**{**batch.__dict__, "features": features})
    out = model(bad)
    loss = (out - 1).square().mean()
    loss.backward()
    assert torch.isfinite(loss)
    for name, p in model.named_parameters():
        assert p.grad is None or torch.isfinite(p.grad).all(), name


@pytest.mark.parametrize("encoder", ["mlp", "resnet"])
def test_embeddings_training_never_read_cannot_move_an_evaluation(shop, encoder):
    """A model trained on one batch, evaluated on another: rewriting every category's
    embedding that training never read leaves the evaluation as it is, rewriting those
    it read does not."""
    torch.manual_seed(0)
    packer = BatchPacker(shop.metadata(), "transactions", 2, dynamic=False)
    trained_on, evaluated = sample_batches(shop, "transactions", [8, 64], [3, 3],
                                           transform=packer)
    model = RelationalModel(shop, seed_type="transactions", task_type="regression",
                            channels=C, encoder=encoder, temporal_stats=False)
    model.train()
    model(trained_on)
    model.eval()
    before = model(evaluated)
    tables = [m for m in model.modules() if hasattr(m, "trained")]
    assert tables and any(int((~m.trained[1:]).sum()) for m in tables)
    with torch.no_grad():
        for m in tables:
            never = ~m.trained
            never[0] = False  # row 0: the missing value's padding, not a category
            m.emb.weight[never] = 100.0
    torch.testing.assert_close(model(evaluated), before)
    with torch.no_grad():
        for m in tables:
            m.emb.weight[m.trained] += torch.randn_like(m.emb.weight[m.trained])
    assert not torch.allclose(model(evaluated), before)


def test_tables_without_features_get_a_learned_vector(shop, batch):
    encoder = HeteroEncoder(shop.node_types, {nt: dict(shop[nt].tf.col_names_dict)
                                              for nt in shop.node_types if "tf" in shop[nt]},
                            shop.col_stats_dict, C, time_types=["transactions"])
    x = encoder(batch)
    assert "stores" not in batch.features
    stores = x["stores"]
    assert stores.shape == (batch.gather["stores"].numel(), C)
    assert torch.equal(stores, encoder.featureless["n_stores"].expand_as(stores))
    # Shallow embeddings make each store distinct.
    shallow = HeteroEncoder(shop.node_types, {}, {}, C, shallow={"stores": 5})
    ids = batch.rows["stores"][batch.gather["stores"]]
    x = shallow(batch)["stores"]
    assert torch.equal(x, shallow.shallow["n_stores"](ids) + shallow.featureless["n_stores"])


def test_each_distinct_row_is_encoded_once(shop, batch, monkeypatch):
    encoder = HeteroEncoder(shop.node_types, {"items": dict(shop["items"].tf.col_names_dict)},
                            shop.col_stats_dict, C)
    seen = []
    monkeypatch.setattr(FusedRowEncoder, "forward",
                        lambda self, feats, num_rows: seen.append(num_rows) or
                        torch.zeros(num_rows, C))
    x = encoder(batch)
    assert seen == [batch.rows["items"].numel()] < [batch.gather["items"].numel()]
    assert x["items"].shape[0] == batch.gather["items"].numel()


def test_unsupported_stype_names_column_and_choices(shop):
    cols = {stype.numerical: ["price"], stype.text_tokenized: ["review"]}
    stats = shop.col_stats_dict["items"]
    match = (r"Column 'review' of node type 'items' has stype 'text_tokenized', which no "
             r"encoder handles; encoders exist for \['categorical', 'embedding', ")
    with pytest.raises(ValueError, match=match):
        FusedRowEncoder(C, stats, cols, table="items")
    with pytest.raises(ValueError, match=match):
        StypeWiseFeatureEncoder(C, stats, cols, table="items")


def test_stype_encoder_overrides_are_checked(shop):
    cols = dict(shop["items"].tf.col_names_dict)
    stats = shop.col_stats_dict["items"]
    with pytest.raises(ValueError, match=r"stype_encoders\['numerical'\]='bucket' is not an "
                                         r"encoder; valid encoders are \['linear', "):
        FrameRowEncoder("resnet", C, stats, cols, stype_encoders={"numerical": "bucket"})
    with pytest.raises(ValueError, match=r"stype_encoders\['numerical'\]='embedding' cannot "
                                         "encode numerical columns"):
        FrameRowEncoder("resnet", C, stats, cols, stype_encoders={"numerical": "embedding"})
    with pytest.raises(ValueError, match=r"stype_encoders names the stype 'text'"):
        FrameRowEncoder("resnet", C, stats, cols, stype_encoders={"text": "linear"})


def test_unknown_encoder_is_named(shop):
    with pytest.raises(ValueError, match=r"Unknown encoder='tabnet'; valid choices are "
                                         r"\['mlp', 'resnet', 'fttransformer'\]"):
        RelationalModel(shop, seed_type="transactions", task_type="binary", encoder="tabnet")


def test_relative_time_encoding_depends_on_the_seed(shop, batch):
    encoder = HeteroEncoder(shop.node_types, {}, {}, C, time_types=["transactions"])
    x = encoder(batch)["transactions"]
    rel = batch.rel_time["transactions"]
    same = (rel.unsqueeze(0) == rel.unsqueeze(1))
    differ = ~same
    gaps = (x.unsqueeze(0) - x.unsqueeze(1)).abs().sum(-1)
    # Equal times give equal encodings up to float rounding (the same inputs can
    # take different SIMD paths per row); different times differ far more.
    assert float(gaps[same].max()) < 1e-5 < float(gaps[differ].min())
    assert torch_frame.stype.timestamp.value == "timestamp"


def _places_by_hand(value: float, edges: list[float]) -> list[float]:
    # Per quartile bin: 0 below, 1 above, the fraction inside; the first bin
    # open below, the last open above; a zero-width bin a step; NaN -> 0.
    out = []
    last = len(edges) - 2
    for k in range(last + 1):
        lo, hi = edges[k], edges[k + 1]
        if math.isnan(value):
            out.append(0.0)
        elif hi == lo:
            out.append(1.0 if value >= hi else 0.0)
        else:
            frac = (value - lo) / (hi - lo)
            out.append(min(frac, 1.0) if k == 0 else max(frac, 0.0) if k == last
                       else min(max(frac, 0.0), 1.0))
    return out


@settings(max_examples=60, deadline=None)
@given(hst.lists(hst.lists(hst.integers(-3, 3), min_size=5, max_size=5), min_size=1, max_size=3),
       hst.lists(hst.one_of(hst.floats(-10, 10), hst.just(float("nan"))), min_size=1,
                 max_size=8))
def test_piecewise_places_equal_a_count_by_hand(edge_lists, values):
    edges = [sorted(float(e) for e in col) for col in edge_lists]
    stats = [{StatType.MEAN: 0.0, StatType.STD: 1.0, StatType.QUANTILES: e} for e in edges]
    part = PiecewiseNumericalTerm(stats, 4)
    feat = torch.tensor([[v] * len(edges) for v in values], dtype=torch.float32)
    got = part.places(feat)
    want = [[p for col, e in enumerate(edges)
             for p in _places_by_hand(float(torch.tensor(v, dtype=torch.float32)), e)]
            for v in values]
    torch.testing.assert_close(got, torch.tensor(want, dtype=torch.float32),
                               rtol=1e-5, atol=1e-5)


def test_piecewise_encoding_keeps_skewed_small_values_apart(shop):
    # A count column that is mostly 0 with a long tail: standardised, 0, 1 and
    # 2 lie within 0.02 of each other; their quartile places differ by whole steps.
    stats = [{StatType.MEAN: 20.0, StatType.STD: 100.0, StatType.QUANTILES: [0, 0, 0, 2, 1000]}]
    places = PiecewiseNumericalTerm(stats, 4).places(torch.tensor([[0.0], [1.0], [2.0]]))
    assert places.tolist() == [[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.5, 0.0],
                               [1.0, 1.0, 1.0, 0.0]]


def test_piecewise_encoding_is_for_the_fused_encoder(shop):
    with pytest.raises(ValueError, match=r"numerical_encoding='piecewise' is for the 'mlp' "
                                         r"encoder; 'resnet' takes stype_encoders"):
        RelationalModel(shop, seed_type="transactions", task_type="binary", encoder="resnet",
                        numerical_encoding="piecewise")
