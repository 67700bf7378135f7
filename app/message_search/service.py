"""History search of one agent session: which raw messages, archived ones included, hold the
words an agent asks for, best first. Reads only; never commits.

Owns the request's rules (an agent session the credential can see, a seq range inside it, a
query with words in it) and hands the match to the repository. The cost depends on the
messages that match, through a GIN index, never on reading the history.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import InvalidInput
from app.message_search.query import prepared
from app.message_search.records import SearchResult
from app.message_search.repository import HistoryRepository
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal


class HistoryService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.agent_sessions = AgentSessionService(db, principal)
        self.history = HistoryRepository(db, principal.scope)

    async def search(
        self,
        agent_session_id: uuid.UUID,
        query: str,
        *,
        from_seq: int | None = None,
        to_seq: int | None = None,
        limit: int = 10,
    ) -> SearchResult:
        agent_session = await self.agent_sessions.get(agent_session_id)
        first = 1 if from_seq is None else from_seq
        last = agent_session.last_seq if to_seq is None else to_seq
        if first > last and (from_seq is not None and to_seq is not None):
            message = "from_seq must not be greater than to_seq"
            raise InvalidInput(message, errors=[{"loc": ["query", "from_seq"], "msg": message}])
        words = prepared(query)
        if not any(character.isalnum() for character in words):
            message = "q has no words to search for"
            raise InvalidInput(message, errors=[{"loc": ["query", "q"], "msg": message}])
        hits = await self.history.search(
            agent_session_id, words, from_seq=first, to_seq=last, limit=limit
        )
        return SearchResult(hits, first, last)
