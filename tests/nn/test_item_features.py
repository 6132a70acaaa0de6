"""Item columns in the two-tower head: each item's vector is the sum of its
category embeddings, and what a seed is taught to like carries over to the
items of the same kind that it was never shown."""
from __future__ import annotations

import pandas as pd
import pytest
import torch
import torch_frame
from torch_frame import stype

from rdl.nn.heads import ItemFeatures, TwoTowerHead
from rdl.nn.ranking import two_tower_loss


def item_frame(kinds: list[str | None], prices: list[float]) -> tuple[torch_frame.TensorFrame,
                                                                      dict]:
    frame = pd.DataFrame({"kind": kinds, "price": prices})
    dataset = torch_frame.data.Dataset(frame, {"kind": stype.categorical,
                                               "price": stype.numerical})
    dataset.materialize()
    return dataset.tensor_frame, dataset.col_stats


def filled(tf: torch_frame.TensorFrame, col_stats: dict, channels: int = 8) -> ItemFeatures:
    features = ItemFeatures(tf.num_rows, channels, tf.col_names_dict, col_stats)
    features.fill(tf)
    return features


def test_each_item_vector_is_the_sum_of_its_category_embeddings():
    frame = pd.DataFrame({"kind": ["a", "b", None, "a", "c"],
                          "colour": ["red", None, "blue", "blue", "red"],
                          "price": [1.0, 2.0, 3.0, 4.0, 5.0]})
    dataset = torch_frame.data.Dataset(frame, {"kind": stype.categorical,
                                               "colour": stype.categorical,
                                               "price": stype.numerical})
    dataset.materialize()
    tf = dataset.tensor_frame
    features = filled(tf, dataset.col_stats)
    assert features.columns == list(tf.col_names_dict[stype.categorical])
    out, emb = features(), features.categorical.emb.weight
    sizes = [len(dataset.col_stats[c][torch_frame.data.stats.StatType.COUNT][0])
             for c in features.columns]
    for i in range(tf.num_rows):
        expected, offset = torch.zeros(8), 1
        for column, size in enumerate(sizes):
            code = int(tf.feat_dict[stype.categorical][i, column])
            if code >= 0:
                expected = expected + emb[offset + code]
            offset += size
        torch.testing.assert_close(out[i], expected)


def test_items_with_the_same_columns_get_the_same_vector():
    tf, stats = item_frame(["a", "b", "a", None], [1.0, 1.0, 2.0, 2.0])
    out = filled(tf, stats)()
    torch.testing.assert_close(out[0], out[2])  # the price is not read
    assert not torch.allclose(out[0], out[1])
    torch.testing.assert_close(out[3], torch.zeros(8))  # a missing kind adds nothing


def rise_of_an_unseen_item_of_the_liked_kind(tf, stats, columns: bool, seed: int) -> float:
    r"""Trains a head on one seed whose only positive is item 0 (kind ``a``)
    and returns how much the score of item 1 (kind ``a``, never a positive)
    rose against the mean of items 3-5 (kind ``b``, never positives either)."""
    torch.manual_seed(seed)
    head = TwoTowerHead(8, 6, item_features=filled(tf, stats) if columns else None)
    h = torch.randn(1, 8)

    def gap() -> float:
        with torch.no_grad():
            scores = head(h)[0]
        return float(scores[1] - scores[3:].mean())

    before = gap()
    optimizer = torch.optim.Adam(head.parameters(), lr=0.01)
    for _ in range(100):
        optimizer.zero_grad()
        two_tower_loss(head(h), torch.tensor([0]), torch.tensor([0])).backward()
        optimizer.step()
    return gap() - before


def test_a_liked_item_lifts_the_unseen_items_of_its_kind_only_with_item_features():
    tf, stats = item_frame(["a", "a", "a", "b", "b", "b"], [1.0] * 6)
    seeds = range(5)
    with_columns = [rise_of_an_unseen_item_of_the_liked_kind(tf, stats, True, s) for s in seeds]
    without = [rise_of_an_unseen_item_of_the_liked_kind(tf, stats, False, s) for s in seeds]
    assert min(with_columns) > 1.5, with_columns
    assert abs(sum(without) / len(without)) < 0.5, without


def test_fill_refuses_another_table():
    tf, stats = item_frame(["a", "b"], [1.0, 2.0])
    features = ItemFeatures(3, 8, tf.col_names_dict, stats)
    with pytest.raises(ValueError, match="item table has 2 rows; this model was built for 3"):
        features.fill(tf)
    other, other_stats = item_frame(["a", "b", "c"], [1.0, 2.0, 3.0])
    renamed = other_stats | {"colour": other_stats["kind"]}
    features = ItemFeatures(3, 8, {stype.categorical: ["colour"]}, renamed)
    with pytest.raises(ValueError, match=r"categorical columns are \['kind'\]; this model "
                                         r"reads \['colour'\]"):
        features.fill(other)


def test_a_table_without_categorical_columns_has_none_to_read():
    assert not ItemFeatures.readable({stype.numerical: ["price"], stype.timestamp: ["at"]})
    assert not ItemFeatures.readable(None)
    assert ItemFeatures.readable({stype.categorical: ["kind"]})
    with pytest.raises(ValueError, match=r"needs a categorical column \(the item table has "
                                         r"numerical, timestamp columns\)"):
        ItemFeatures(3, 8, {stype.timestamp: ["at"], stype.numerical: ["price"]}, {})
