"""The lineage of a fork, pure: which agent session holds each part of a history (tables at,
below and above every segment boundary)."""

from __future__ import annotations

import uuid

import pytest

from app.sessions.lineage import Lineage, Piece, Segment

ROOT = uuid.UUID(int=1)
CHILD = uuid.UUID(int=2)
ME = uuid.UUID(int=3)

PLAIN = Lineage(ME)
FORK = Lineage(ME, (Segment(ROOT, 10, 2),))
"""Messages 1..10 and archives 1..2 are ROOT's; the rest are ME's."""
CHAIN = Lineage(ME, (Segment(ROOT, 10, 2), Segment(CHILD, 15, 4)))
"""1..10 ROOT's, 11..15 CHILD's, then ME's (archives 1..2, 3..4, then 5..)."""


@pytest.mark.parametrize(
    ("lineage", "after", "upto", "pieces"),
    [
        (PLAIN, 0, None, [Piece(ME, 0, None)]),
        (PLAIN, 5, 8, [Piece(ME, 5, 8)]),
        (FORK, 0, None, [Piece(ROOT, 0, 10), Piece(ME, 10, None)]),
        (FORK, 0, 9, [Piece(ROOT, 0, 9)]),
        (FORK, 0, 10, [Piece(ROOT, 0, 10)]),
        (FORK, 0, 11, [Piece(ROOT, 0, 10), Piece(ME, 10, 11)]),
        (FORK, 9, None, [Piece(ROOT, 9, 10), Piece(ME, 10, None)]),
        (FORK, 10, None, [Piece(ME, 10, None)]),
        (FORK, 11, None, [Piece(ME, 11, None)]),
        (FORK, 10, 10, []),
        (FORK, 12, 11, []),
        (CHAIN, 0, None, [Piece(ROOT, 0, 10), Piece(CHILD, 10, 15), Piece(ME, 15, None)]),
        (CHAIN, 10, 15, [Piece(CHILD, 10, 15)]),
        (CHAIN, 9, 16, [Piece(ROOT, 9, 10), Piece(CHILD, 10, 15), Piece(ME, 15, 16)]),
    ],
)
def test_seq_pieces(lineage: Lineage, after: int, upto: int | None, pieces: list[Piece]) -> None:
    assert lineage.seq_pieces(after, upto) == pieces


@pytest.mark.parametrize(
    ("lineage", "after", "upto", "pieces"),
    [
        (PLAIN, 0, None, [Piece(ME, 0, None)]),
        (FORK, 0, None, [Piece(ROOT, 0, 2), Piece(ME, 2, None)]),
        (FORK, 1, 2, [Piece(ROOT, 1, 2)]),
        (FORK, 2, 3, [Piece(ME, 2, 3)]),
        (CHAIN, 3, 5, [Piece(CHILD, 3, 4), Piece(ME, 4, 5)]),
    ],
)
def test_archive_pieces(
    lineage: Lineage, after: int, upto: int | None, pieces: list[Piece]
) -> None:
    assert lineage.archive_pieces(after, upto) == pieces


@pytest.mark.parametrize(
    ("seq", "holder"), [(1, ROOT), (10, ROOT), (11, CHILD), (15, CHILD), (16, ME), (99, ME)]
)
def test_holder_of_seq(seq: int, holder: uuid.UUID) -> None:
    assert CHAIN.holder_of_seq(seq) == holder
    assert CHAIN.inherited(seq) == (holder != ME)


@pytest.mark.parametrize(("archive_seq", "holder"), [(1, ROOT), (2, ROOT), (3, CHILD), (5, ME)])
def test_holder_of_archive(archive_seq: int, holder: uuid.UUID) -> None:
    assert CHAIN.holder_of_archive(archive_seq) == holder


def test_a_plain_session_holds_its_own_rows() -> None:
    assert not PLAIN.is_fork
    assert FORK.is_fork
    assert PLAIN.holder_of_seq(1) == ME
    assert not PLAIN.inherited(1)


@pytest.mark.parametrize(
    ("lineage", "upto_seq", "upto_archive", "ancestors"),
    [
        (PLAIN, 0, 0, ()),
        (PLAIN, 6, 2, (Segment(ME, 6, 2),)),
        # At, below and above the end of the shared part.
        (FORK, 10, 2, (Segment(ROOT, 10, 2),)),
        (FORK, 6, 1, (Segment(ROOT, 6, 1),)),
        (FORK, 14, 3, (Segment(ROOT, 10, 2), Segment(ME, 14, 3))),
        # A version appended with no new message (a restore) right after the fork point.
        (FORK, 10, 3, (Segment(ROOT, 10, 2), Segment(ME, 10, 3))),
        (CHAIN, 12, 3, (Segment(ROOT, 10, 2), Segment(CHILD, 12, 3))),
        (CHAIN, 20, 6, (Segment(ROOT, 10, 2), Segment(CHILD, 15, 4), Segment(ME, 20, 6))),
    ],
)
def test_fork_at(
    lineage: Lineage, upto_seq: int, upto_archive: int, ancestors: tuple[Segment, ...]
) -> None:
    assert lineage.fork_at(upto_seq, upto_archive) == ancestors
