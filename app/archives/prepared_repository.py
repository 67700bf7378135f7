"""An agent session's prepared generation (``prepared_generations``): the state the generator
reached over closed batches while the agent session was idle, which its commit's job resumes
from. At most one row per agent session; a cache derived from its messages. Every statement
names the repository's tenant (row-level security backs it up). Flushes, never commits."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import AgentSession, MessageRedaction, PreparedGeneration
from app.tenancy.principal import Scope


@dataclass(frozen=True, slots=True)
class PreparedRow:
    agent_session_id: uuid.UUID
    prior_archive_seq: int
    """The done archive whose working memory the generation started from (0: none)."""
    first_seq: int
    end_seq: int
    """The message range the prepared batches cover."""
    budget: int
    fingerprint: str
    state: Mapping[str, Any]
    """The generator's own state, stored as JSON and handed back unchanged."""


class PreparedRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def get(self, agent_session_id: uuid.UUID) -> PreparedRow | None:
        found = (
            await self.db.execute(
                select(
                    PreparedGeneration.prior_archive_seq,
                    PreparedGeneration.first_seq,
                    PreparedGeneration.end_seq,
                    PreparedGeneration.budget,
                    PreparedGeneration.fingerprint,
                    PreparedGeneration.state,
                ).where(
                    PreparedGeneration.tenant_id == self.scope.tenant_id,
                    PreparedGeneration.agent_session_id == agent_session_id,
                )
            )
        ).one_or_none()
        if found is None:
            return None
        return PreparedRow(
            agent_session_id=agent_session_id,
            prior_archive_seq=found.prior_archive_seq,
            first_seq=found.first_seq,
            end_seq=found.end_seq,
            budget=found.budget,
            fingerprint=found.fingerprint,
            state=found.state,
        )

    async def put(self, row: PreparedRow) -> None:
        """Store ``row`` as the agent session's prepared generation, replacing any before it."""
        values: dict[str, Any] = {
            "prior_archive_seq": row.prior_archive_seq,
            "first_seq": row.first_seq,
            "end_seq": row.end_seq,
            "budget": row.budget,
            "fingerprint": row.fingerprint,
            "state": dict(row.state),
        }
        statement = insert(PreparedGeneration).values(
            tenant_id=self.scope.tenant_id, agent_session_id=row.agent_session_id, **values
        )
        await self.db.execute(
            statement.on_conflict_do_update(
                index_elements=[PreparedGeneration.tenant_id, PreparedGeneration.agent_session_id],
                set_={
                    **{column: statement.excluded[column] for column in values},
                    "created_at": func.now(),
                },
            )
        )

    async def drop(self, agent_session_id: uuid.UUID) -> None:
        await self.db.execute(
            delete(PreparedGeneration).where(
                PreparedGeneration.tenant_id == self.scope.tenant_id,
                PreparedGeneration.agent_session_id == agent_session_id,
            )
        )

    async def redactions(self, agent_session_id: uuid.UUID) -> int:
        """How many messages of the agent session were ever redacted."""
        return int(
            await self.db.scalar(
                select(func.count()).where(
                    MessageRedaction.tenant_id == self.scope.tenant_id,
                    MessageRedaction.agent_session_id == agent_session_id,
                )
            )
            or 0
        )

    async def hold(self, agent_session_id: uuid.UUID) -> None:
        """Hold the agent session until the transaction ends against a redaction (which locks
        it for update) without holding up appends (a key share lock)."""
        await self.db.execute(
            select(AgentSession.agent_session_id)
            .where(
                AgentSession.tenant_id == self.scope.tenant_id,
                AgentSession.agent_session_id == agent_session_id,
            )
            .with_for_update(key_share=True)
        )
