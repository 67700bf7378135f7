"""A fork's lineage: which agent session holds each part of its history. Pure.

A fork shares its parent's messages and archives up to the fork point instead of copying them:
its history is a chain of segments, each a range of seqs and of archive numbers read from one
agent session (an ancestor's, then its own, unbounded). Readers split what they ask for into
per-segment pieces; this module only computes them and never reads anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Segment:
    """Messages ``seq <= upto_seq`` and archives ``archive_seq <= upto_archive_seq`` of
    ``agent_session_id`` (after those of the segment before); ``None``: unbounded (the agent
    session's own rows, always last)."""

    agent_session_id: uuid.UUID
    upto_seq: int | None
    upto_archive_seq: int | None


@dataclass(frozen=True, slots=True)
class Piece:
    """The rows ``after < n <= upto`` (``upto`` ``None``: no bound) of ``agent_session_id``."""

    agent_session_id: uuid.UUID
    after: int
    upto: int | None


@dataclass(frozen=True, slots=True)
class Lineage:
    """An agent session and, oldest first, the segments of its history held by ancestors."""

    agent_session_id: uuid.UUID
    ancestors: tuple[Segment, ...] = ()

    @property
    def is_fork(self) -> bool:
        return bool(self.ancestors)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return (*self.ancestors, Segment(self.agent_session_id, None, None))

    def seq_pieces(self, after: int, upto: int | None = None) -> list[Piece]:
        """Messages ``after < seq <= upto`` as pieces, oldest first; none that are empty."""
        return list(_pieces(self.segments, after, upto, archives=False))

    def archive_pieces(self, after: int, upto: int | None = None) -> list[Piece]:
        """Archives ``after < archive_seq <= upto`` as pieces, oldest first."""
        return list(_pieces(self.segments, after, upto, archives=True))

    def holder_of_seq(self, seq: int) -> uuid.UUID:
        """The agent session whose row is message ``seq`` of this history."""
        return _holder(self.seq_pieces(seq - 1, seq), self.agent_session_id)

    def holder_of_archive(self, archive_seq: int) -> uuid.UUID:
        """The agent session whose row is archive ``archive_seq`` of this history."""
        return _holder(self.archive_pieces(archive_seq - 1, archive_seq), self.agent_session_id)

    def inherited(self, seq: int) -> bool:
        """Whether message ``seq`` is an ancestor's (shared with it, not this session's)."""
        return self.holder_of_seq(seq) != self.agent_session_id

    def fork_at(self, upto_seq: int, upto_archive_seq: int) -> tuple[Segment, ...]:
        """The ancestors of a fork of this history holding its messages ``1..upto_seq`` and
        archives ``1..upto_archive_seq``: these segments cut there, this session's own rows
        becoming one more bounded segment (segments left empty are dropped)."""
        chosen: list[Segment] = []
        seq_floor = archive_floor = 0
        for segment in self.segments:
            seq_top = _lower(segment.upto_seq, upto_seq)
            archive_top = _lower(segment.upto_archive_seq, upto_archive_seq)
            if seq_top > seq_floor or archive_top > archive_floor:
                chosen.append(Segment(segment.agent_session_id, seq_top, archive_top))
            if segment.upto_seq is None or segment.upto_archive_seq is None:
                break
            seq_floor = max(seq_floor, segment.upto_seq)
            archive_floor = max(archive_floor, segment.upto_archive_seq)
            if seq_floor >= upto_seq and archive_floor >= upto_archive_seq:
                break
        return tuple(chosen)


def _lower(bound: int | None, limit: int) -> int:
    return limit if bound is None else min(bound, limit)


def _pieces(
    segments: tuple[Segment, ...], after: int, upto: int | None, *, archives: bool
) -> Iterator[Piece]:
    floor = 0
    for segment in segments:
        top = segment.upto_archive_seq if archives else segment.upto_seq
        low = max(after, floor)
        high = top if upto is None else (upto if top is None else min(top, upto))
        if high is None or high > low:
            yield Piece(segment.agent_session_id, low, high)
        if top is None:
            return
        floor = max(floor, top)


def _holder(pieces: list[Piece], default: uuid.UUID) -> uuid.UUID:
    return pieces[0].agent_session_id if pieces else default
