"""An offline, reproducible text embedder (no model download, same vectors in
every process): signed feature hashing of word unigrams and bigrams."""
from __future__ import annotations

import torch
from sklearn.feature_extraction.text import HashingVectorizer


class HashTextEmbedder:
    r"""Embeds texts as L2-normalised signed hashed n-gram counts.

    Murmur hashing with a fixed seed makes the vectors identical across
    processes and machines, unlike Python's salted ``hash``.

    Args:
        dim (int): Embedding size. (default: :obj:`64`)
    """

    def __init__(self, dim: int = 64) -> None:
        if dim < 1:
            raise ValueError(f"HashTextEmbedder needs dim >= 1, got {dim}.")
        self.dim = dim
        self._vectorizer = HashingVectorizer(
            n_features=dim, ngram_range=(1, 2), alternate_sign=True, norm="l2",
        )

    def __call__(self, texts: list[str]) -> torch.Tensor:
        matrix = self._vectorizer.transform(["" if t is None else str(t) for t in texts])
        return torch.from_numpy(matrix.toarray()).to(torch.float32)

    def __repr__(self) -> str:
        return f"HashTextEmbedder(dim={self.dim})"
