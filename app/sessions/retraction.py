"""Retracting a live message: the append-only answer to "take back the last message".

Owns the rule: only a live message (after the newest archive) can be retracted — an archived
one is already part of a working memory — and a retraction is recorded once, never undone. The
message stays as stored (``GET …/messages`` still lists it); the context and the next working
memory leave it out. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import Conflict, NotFound
from app.sessions.message_repository import RetractionRepository
from app.sessions.records import StoredMessage
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal


@dataclass(frozen=True, slots=True)
class Retraction:
    message: StoredMessage
    retracted_at: datetime
    archived_upto_seq: int


class RetractionService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.agent_sessions = AgentSessionService(db, principal)
        self.retractions = RetractionRepository(db, principal.scope)

    async def retract(self, agent_session_id: uuid.UUID, seq: int | None) -> Retraction | None:
        """Retract message ``seq``, or the newest live one not retracted yet (``None`` when
        there is none). Retracting a retracted message again changes nothing."""
        # The row lock orders this against commits, which move the archive boundary.
        agent_session = await self.agent_sessions.get(agent_session_id, lock=True)
        archived = agent_session.archived_upto_seq
        if seq is None:
            message = await self.retractions.newest_live(agent_session_id, archived)
            if message is None:
                return None
        else:
            if seq > agent_session.last_seq:
                raise NotFound(f"message {seq} not found")
            if seq <= archived:
                raise Conflict(
                    f"message {seq} is archived (its working memory may hold it); only live "
                    f"messages, after seq {archived}, can be retracted"
                )
            found = await self.retractions.message(agent_session_id, seq)
            if found is None:
                raise NotFound(f"message {seq} not found")
            message = found
        retracted_at = await self.retractions.record(agent_session_id, message.seq)
        return Retraction(message, retracted_at, archived)
