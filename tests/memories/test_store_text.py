"""The text forms the write path binds: a vector written once a candidate, and source seqs."""

from __future__ import annotations

import pytest
from pgvector import Vector

from app.memories.hashing import embed_text
from app.memories.store import seqs_text, vector_text


@pytest.mark.parametrize(
    "vector",
    [
        [],
        [0.0],
        [1, -2, 3],
        [0.1, -0.25, 1e-7, 123456.789],
        [1.0 / 3.0] * 5,
        embed_text("I moved to Berlin last month."),
        embed_text("nothing here"),
    ],
)
def test_a_vector_is_written_as_the_driver_adaptation_writes_it(vector: list[float]) -> None:
    assert vector_text(vector) == Vector._to_db(vector)


def test_a_vector_written_out_reads_back_to_the_same_values() -> None:
    vector = embed_text("My favorite color is teal.")
    assert Vector._from_text(vector_text(vector)) == vector


@pytest.mark.parametrize(
    ("seqs", "written"),
    [((), "{}"), ((7,), "{7}"), ((1, 2, 30), "{1,2,30}"), ([4, 5], "{4,5}")],
)
def test_source_seqs_are_written_as_an_array_literal(seqs: tuple[int, ...], written: str) -> None:
    assert seqs_text(seqs) == written
