"""The ``hashing`` embedder: deterministic signed feature hashing of word unigrams and bigrams.

Owns the offline default embedding (384 dimensions unless configured): each content word (light
stem) and each pair of adjacent content words is hashed with BLAKE2b — stable across processes,
unlike Python's ``hash()`` — into one dimension with a sign, and the sum is L2-normalised. Cosine
similarity is then honest lexical overlap. Pure math; needs no model and no network.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from typing import Final

from app.memories.text import content_words

VERSION: Final = "v1"
DEFAULT_DIM: Final = 384
BIGRAM_WEIGHT: Final = 0.5
"""Bigrams count half: they reward shared phrasing without drowning shared words."""


def _slot(feature: str, dim: int) -> tuple[int, float]:
    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
    # The top bit gives the sign, the rest the dimension: collisions then cancel on average
    # instead of piling up (the point of *signed* feature hashing).
    return (digest & (2**63 - 1)) % dim, 1.0 if digest >> 63 else -1.0


def features(text: str) -> list[tuple[str, float]]:
    """The weighted features of ``text``: content-word unigrams, then their adjacent bigrams."""
    words = content_words(text)
    found = [(f"w:{word}", 1.0) for word in words]
    found += [(f"b:{first} {second}", BIGRAM_WEIGHT) for first, second in itertools.pairwise(words)]
    return found


def embed_text(text: str, dim: int = DEFAULT_DIM) -> list[float]:
    """The unit vector of ``text`` (all zeros when it has no content word)."""
    vector = [0.0] * dim
    for feature, weight in features(text):
        index, sign = _slot(feature, dim)
        vector[index] += sign * weight
    norm = math.sqrt(sum(value * value for value in vector))
    if norm == 0.0:
        return vector
    return [value / norm for value in vector]


class HashingEmbedder:
    """The offline ``Embedder``: deterministic, local, ``hashing:v1:<dim>``."""

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        if dim < 1:
            raise ValueError("dim must be positive")
        self._dim = dim

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim})"

    @property
    def identity(self) -> str:
        return f"hashing:{VERSION}:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [embed_text(text, self._dim) for text in texts]
