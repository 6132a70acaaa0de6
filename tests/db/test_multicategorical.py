"""Delimited tags ("Action|Comedy") are multicategorical: inferred, split into
lists, materialised and learned from end to end; text and numbers with commas
are not tags."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import rdl
from rdl.db.stypes import assign_stypes, infer_stype, tag_delimiter

GENRES = ["Action", "Comedy", "Drama", "Horror", "Romance", "Thriller", "Sci-Fi",
          "Science Fiction", "Film-Noir"]


def tags(delimiter: str, n: int = 300, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [delimiter.join(rng.choice(GENRES, rng.integers(1, 4), replace=False))
            for _ in range(n)]


def cities(n: int = 300) -> list[str]:
    rng = np.random.default_rng(0)
    state = {f"Town{i}": rng.choice(["TX", "CA", "NY"]) for i in range(120)}
    return [f"{c}, {state[c]}" for c in rng.choice(list(state), n)]


def sentences(n: int = 200) -> list[str]:
    rng = np.random.default_rng(0)
    return [f"Flight {i} was {rng.choice(['late', 'early'])}, and the crew, as usual, was "
            f"{rng.choice(['kind', 'rude', 'tired'])}" for i in range(n)]


@pytest.mark.parametrize("values, stype, delimiter", [
    (tags("|"), "multicategorical", "|"),
    (tags(";"), "multicategorical", ";"),
    (tags(","), "multicategorical", ","),
    (tags(", "), "multicategorical", ","),
    (["a|b", "b", "c|a", "b|c"] * 5, "multicategorical", "|"),
    (sentences(), "text_embedded", None),  # free text with commas stays text
    (["12,5", "3,25", "7,0", "100,75"] * 20, "categorical", None),  # decimal commas
    (["1,200", "15,000", "2,500"] * 20, "categorical", None),  # thousands
    (cities(), "categorical", None),  # "Town7, TX": the towns are mostly unique pieces
    (["A|B"] * 30, "categorical", None),  # one value: nothing is combined
    ([f"NY|{10000 + i}" for i in range(100)], "categorical", None),  # code with a suffix
])
def test_inference(values, stype, delimiter):
    series = pd.Series(values)
    assert infer_stype(series) == stype
    if stype == "multicategorical":
        assert tag_delimiter(series) == delimiter


def test_text_is_split_into_clean_lists_whatever_its_dtype():
    for dtype in (object, "str"):
        values = ["Drama| Comedy", None, "Action||Drama|", "Comedy", "Action|Comedy"] * 6
        df = pd.DataFrame({"genres": pd.Series(values, dtype=dtype)})
        assert assign_stypes("movies", df, set(), {}, []) == {"genres": "multicategorical"}
        assert df["genres"].tolist()[:3] == [["Drama", "Comedy"], None, ["Action", "Drama"]]


def test_declared_tags_split_at_the_most_common_delimiter():
    df = pd.DataFrame({"labels": ["x;y", "z", "w", "v", "u"] * 4,
                       "single": ["red", "blue", "red", "red", "blue"] * 4})
    declared = {"labels": "multicategorical", "single": "multicategorical"}
    assert assign_stypes("t", df, set(), declared, []) == declared
    assert df["labels"].tolist()[:2] == [["x", "y"], ["z"]]
    assert df["single"].tolist()[:2] == [["red"], ["blue"]]


@pytest.fixture(scope="module")
def movies_db(tmp_path_factory):
    """Movies (static, ``|``-separated genres in a CSV) and their ratings."""
    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("movies")
    pd.DataFrame({"mid": range(40), "genres": tags("|", 40), "year": rng.integers(1980, 2000, 40)}) \
        .to_csv(folder / "movies.csv", index=False)
    seconds = np.sort(rng.integers(0, 86_400 * 300, 400))
    pd.DataFrame({"rid": range(400), "mid": rng.integers(0, 40, 400),
                  "at": pd.Timestamp("2000-01-01") + pd.to_timedelta(seconds, unit="s"),
                  "stars": rng.integers(1, 6, 400).astype(float)}) \
        .to_parquet(folder / "ratings.parquet")
    return rdl.connect(folder, schema={"tables": {
        "movies": {"primary_key": "mid", "time_column": None},
        "ratings": {"primary_key": "rid", "foreign_keys": {"mid": "movies"}, "time_column": "at"},
    }})


@pytest.mark.parametrize("encoder", ["mlp", "resnet"])
def test_a_training_step_learns_the_genre_embeddings(movies_db, encoder):
    from torch_frame import stype

    from rdl.graph import build_graph
    from rdl.nn import RelationalModel
    from rdl.testing.graphs import sample_batches

    assert movies_db["movies"].stypes["genres"] == "multicategorical"
    data = build_graph(movies_db)
    tf = data["movies"].tf
    assert tf.col_names_dict[stype.multicategorical] == ["genres"]
    assert tf.feat_dict[stype.multicategorical].values.numel() == \
        movies_db["movies"].df["genres"].map(len).sum()
    torch.manual_seed(0)
    model = RelationalModel(data, seed_type="ratings", task_type="regression", channels=8,
                            heads=2, encoder=encoder, temporal_stats=False)
    batch = sample_batches(data, "ratings", [32], [4, 4])[0]
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    params = dict(model.named_parameters())
    genre = next(n for n in params if "n_movies" in n and "multicategorical.emb" in n)
    before = params[genre].detach().clone()
    loss = model(model.pack(batch)).pow(2).mean()
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss) and params[genre].grad.abs().sum() > 0
    assert not torch.equal(before, params[genre])
