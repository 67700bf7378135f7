"""A history search hit, as the service returns it: pure data."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Hit:
    """A message that matched: its seq and role, the archive holding it (``None`` while it is
    live), its rank, and the passage around the match, as written in the message."""

    seq: int
    role: str
    archive_seq: int | None
    rank: float
    snippet: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One search's hits, best first, and the seq range it searched."""

    hits: list[Hit]
    from_seq: int
    to_seq: int
