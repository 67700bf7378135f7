"""The ``hashing`` embedder and the words it sees: deterministic, unit length, lexical."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence

import pytest

from app.memories.hashing import DEFAULT_DIM, HashingEmbedder, embed_text, features
from app.memories.text import content_words, stem, tokens


def cosine(first: Sequence[float], second: Sequence[float]) -> float:
    """What pgvector's ``1 - (a <=> b)`` computes; 0 when either vector is all zeros."""
    dot = sum(a * b for a, b in zip(first, second, strict=True))
    norms = math.sqrt(sum(a * a for a in first)) * math.sqrt(sum(b * b for b in second))
    return dot / norms if norms else 0.0


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("painting", "paint"),
        ("paintings", "paint"),
        ("things", "thing"),
        ("sings", "sing"),
        ("cries", "cry"),
        ("painted", "paint"),
        ("running", "run"),
        ("spelling", "spell"),
        ("kissed", "kiss"),
        ("lakes", "lake"),
        ("boxes", "box"),
        ("wishes", "wish"),
        ("stories", "story"),
        ("tried", "try"),
        ("glass", "glass"),
        ("bus", "bus"),
        ("taxis", "taxis"),
        ("is", "is"),
        ("red", "red"),
        ("bed", "bed"),
        ("wanted", "want"),
        ("surprisingly", "surpris"),
    ],
)
def test_stem(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_tokens_normalise_case_apostrophes_and_width() -> None:
    assert tokens("Don’t   PANIC, Ｃａｆé!") == ["don't", "panic", "café"]
    assert tokens("snake_case and 3.11") == ["snake", "case", "and", "3", "11"]


def test_content_words_drop_function_words_but_keep_negations() -> None:
    assert content_words("I don't like the new painting") == ["don't", "like", "new", "paint"]
    assert content_words("I am here, and so are you") == []


def test_features_are_unigrams_then_weighted_bigrams() -> None:
    assert features("I love painting lakes") == [
        ("w:love", 1.0),
        ("w:paint", 1.0),
        ("w:lake", 1.0),
        ("b:love paint", 0.5),
        ("b:paint lake", 0.5),
    ]
    assert features("") == []


@pytest.mark.parametrize(
    "text",
    [
        "I love creating art!",
        "Harry Potter is my favorite book.",
        "x",
        "日本語のテキスト",
        "a much longer sentence " * 40,
    ],
)
def test_vectors_are_unit_length(text: str) -> None:
    vector = embed_text(text)
    assert len(vector) == DEFAULT_DIM
    assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, rel_tol=1e-9)


@pytest.mark.parametrize("text", ["", "   ", "And so it is, as it was.", "!!! ???"])
def test_text_without_content_words_is_the_zero_vector(text: str) -> None:
    assert embed_text(text) == [0.0] * DEFAULT_DIM


def test_same_text_same_vector_in_another_process() -> None:
    """The hash is stable across interpreters (Python's own ``hash()`` is salted per process)."""
    text = "My favourite color is teal and I live in Lisbon"
    script = (
        "import json, sys; from app.memories.hashing import embed_text;"
        f"json.dump(embed_text({text!r}), sys.stdout)"
    )
    env = {"PYTHONHASHSEED": "12345"}
    import json
    import os

    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    ).stdout
    assert json.loads(out) == embed_text(text)
    assert embed_text(text) == embed_text(text)


@pytest.mark.parametrize(
    ("memory", "paraphrase", "unrelated"),
    [
        (
            "I love creating art!",
            "Does she enjoy creating art?",
            "The train to Berlin leaves at noon.",
        ),
        (
            "Harry Potter is my favorite book.",
            "What is his favorite book?",
            "I went hiking in the mountains.",
        ),
        (
            "I'm lactose intolerant, so I'll just need the dairy-free recipe!",
            "Which recipe does a lactose intolerant person need?",
            "Contemporary dance is my top pick.",
        ),
    ],
)
def test_paraphrases_sharing_words_score_higher_than_unrelated_text(
    memory: str, paraphrase: str, unrelated: str
) -> None:
    stored = embed_text(memory)
    assert cosine(stored, embed_text(paraphrase)) > cosine(stored, embed_text(unrelated)) + 0.1
    assert cosine(stored, embed_text(memory)) == pytest.approx(1.0)


def test_word_order_matters_only_through_bigrams() -> None:
    forward = embed_text("coffee before tea")
    backward = embed_text("tea before coffee")
    assert 0.5 < cosine(forward, backward) < 1.0


async def test_embedder_identity_dimension_and_batch() -> None:
    embedder = HashingEmbedder(64)
    assert (embedder.identity, embedder.dim) == ("hashing:v1:64", 64)
    assert repr(embedder) == "HashingEmbedder(dim=64)"
    vectors = await embedder.embed(["one text", "another text"])
    assert vectors == [embed_text("one text", 64), embed_text("another text", 64)]
    assert HashingEmbedder().identity == "hashing:v1:384"
    with pytest.raises(ValueError, match="positive"):
        HashingEmbedder(0)
