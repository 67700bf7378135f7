"""SQL of history search, scoped to one tenant: one statement per search.

The full-text match runs inside ``workmem_history_search`` (a privileged function, listed in
docs/operations.md): row-level security would keep the GIN index from serving ``@@``. What the
function found is then read here under the tenant's own policies: each message's role, the
archive holding it, and a snippet of its own text around the match. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from typing import Final

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.message_search.records import Hit
from app.sessions.lineage_repository import LineageReader
from app.tenancy.principal import Scope

# The snippet is cut from the message's own text: ts_headline runs over the text as indexed
# (separators read as spaces, one character for one), and the same span is taken from the text
# as written, so paths keep their slashes.
_SEARCH: Final = text(
    """
    WITH hits AS (
        SELECT h.seq, h.rank, m.role, m.created_at,
               left(m.content_text, 100000) AS written,
               translate(left(m.content_text, 100000), '/.\\', '   ') AS indexed
        FROM workmem_history_search(:agent_session_id, :query, :from_seq, :to_seq, :limit) h
        JOIN messages m
          ON m.tenant_id = :tenant_id AND m.agent_session_id = :agent_session_id
         AND m.seq = h.seq
    ), cut AS (
        SELECT hits.*,
               ts_headline('english', hits.indexed, websearch_to_tsquery('english', :query),
                           'StartSel="", StopSel="", MaxWords=40, MinWords=15') AS passage
        FROM hits
    )
    SELECT cut.seq, cut.role, cut.rank, cut.created_at,
           (SELECT a.archive_seq FROM archives a
             WHERE a.tenant_id = :tenant_id AND a.agent_session_id = :agent_session_id
               AND a.end_seq >= cut.seq AND a.start_seq <= cut.seq
             ORDER BY a.end_seq LIMIT 1) AS archive_seq,
           CASE WHEN strpos(cut.indexed, cut.passage) > 0
                THEN substr(cut.written, strpos(cut.indexed, cut.passage), length(cut.passage))
                ELSE cut.passage END AS snippet
    FROM cut
    ORDER BY cut.rank DESC, cut.seq DESC
    """
)


SEARCH_TIMEOUT_MS: Final = 2000
"""The most a history search statement may run (the rest of its transaction too)."""
_BOUND: Final = text("SELECT set_config('statement_timeout', :ms, true)")


class HistoryRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope
        self.lineage = LineageReader(db, scope)

    async def search(
        self, agent_session_id: uuid.UUID, query: str, *, from_seq: int, to_seq: int, limit: int
    ) -> list[Hit]:
        """The best hits in ``from_seq..to_seq``; a fork's are searched in each agent session
        holding a part of its history (one statement each) and ranked together."""
        # The search is bounded in time too, well below the service's statement timeout: a
        # query that would still take long answers 503 and holds a connection no longer.
        await self.db.execute(_BOUND, {"ms": str(SEARCH_TIMEOUT_MS)})
        lineage = await self.lineage.of(agent_session_id)
        hits: list[Hit] = []
        for piece in lineage.seq_pieces(from_seq - 1, to_seq):
            last = to_seq if piece.upto is None else piece.upto
            hits += await self._search(piece.agent_session_id, query, piece.after + 1, last, limit)
        hits.sort(key=lambda hit: (-hit.rank, -hit.seq))
        return hits[:limit]

    async def _search(
        self, agent_session_id: uuid.UUID, query: str, from_seq: int, to_seq: int, limit: int
    ) -> list[Hit]:
        rows = await self.db.execute(
            _SEARCH,
            {
                "tenant_id": self.scope.tenant_id,
                "agent_session_id": agent_session_id,
                "query": query,
                "from_seq": from_seq,
                "to_seq": to_seq,
                "limit": limit,
            },
        )
        return [
            Hit(
                seq=row.seq,
                role=row.role,
                archive_seq=row.archive_seq,
                rank=float(row.rank),
                snippet=" ".join(row.snippet.split()),
                created_at=row.created_at,
            )
            for row in rows.all()
        ]
