"""Response body of history search (``/v1/sessions/{id}/history/search``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from app.message_search.records import Hit, SearchResult


class HistoryHitRead(BaseModel):
    seq: int
    role: str
    archive_seq: int | None = Field(
        description="the archive holding the message; null while it is live"
    )
    rank: float = Field(description="full-text rank (cover density); higher is better")
    snippet: str = Field(description="the message's own text around the match, on one line")
    created_at: datetime

    @classmethod
    def from_hit(cls, hit: Hit) -> HistoryHitRead:
        return cls(
            seq=hit.seq,
            role=hit.role,
            archive_seq=hit.archive_seq,
            rank=round(hit.rank, 6),
            snippet=hit.snippet,
            created_at=hit.created_at,
        )


class HistorySearchRead(BaseModel):
    query: str
    from_seq: int
    to_seq: int
    items: list[HistoryHitRead] = Field(description="best first")

    @classmethod
    def from_result(cls, query: str, result: SearchResult) -> HistorySearchRead:
        return cls(
            query=query,
            from_seq=result.from_seq,
            to_seq=result.to_seq,
            items=[HistoryHitRead.from_hit(hit) for hit in result.hits],
        )
