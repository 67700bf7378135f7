"""Recording assembled contexts and reading them back. Flushes, never commits.

A recorded context is one insert in the transaction that assembled it. Reads check that the
caller sees the agent session first (another tenant's or user's answers as missing).
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.context.service import AssembledContext
from app.cursors import decode_cursor, encode_cursor
from app.errors import NotFound
from app.ledger.capture import ledger_entry
from app.ledger.repository import ContextRecordRepository
from app.models import ContextRecord
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal


class LedgerService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.records = ContextRecordRepository(db, principal.scope)
        self.agent_sessions = AgentSessionService(db, principal)

    async def record(self, context: AssembledContext, *, source: str) -> ContextRecord:
        """One ledger row for a context this transaction assembled (and so already saw)."""
        return await self.records.insert(
            ledger_entry(context, source=source), recorded_by=self.principal.api_key_id
        )

    async def page(
        self, agent_session_id: uuid.UUID, *, cursor: str | None, limit: int
    ) -> tuple[list[ContextRecord], str | None]:
        await self.agent_sessions.get(agent_session_id)
        rows = list(
            await self.records.page(
                agent_session_id,
                before=decode_cursor(cursor) if cursor else None,
                limit=limit + 1,
            )
        )
        if len(rows) <= limit:
            return rows, None
        last = rows[limit - 1]
        return rows[:limit], encode_cursor(last.created_at, last.context_id)

    async def get(self, agent_session_id: uuid.UUID, context_id: uuid.UUID) -> ContextRecord:
        await self.agent_sessions.get(agent_session_id)
        row = await self.records.get(agent_session_id, context_id)
        if row is None:
            raise NotFound(f"recorded context {context_id} not found")
        return row
