"""SQL of forks on the agent-session side: the fork's row, the copy of its live messages, and
whether an agent session has forks. Flushes, never commits.

The archived part of a fork's history is never copied (its lineage points at it); only the
messages after its working memory, which are live in the fork, are its own rows.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Text, cast, exists, func, insert, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import (
    AgentSession,
    AgentSessionLineage,
    Message,
    MessageRedaction,
    MessageRetraction,
)
from app.sessions.lineage import Piece
from app.sessions.message_repository import in_piece
from app.tenancy.principal import Scope


class ForkRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def insert(self, values: dict[str, Any]) -> AgentSession:
        statement = (
            insert(AgentSession)
            .values(tenant_id=self.scope.tenant_id, **values)
            .returning(AgentSession)
        )
        return (await self.db.execute(statement)).scalar_one()

    async def set_counters(self, fork_id: uuid.UUID, **values: int) -> AgentSession:
        statement = (
            update(AgentSession)
            .where(
                AgentSession.tenant_id == self.scope.tenant_id,
                AgentSession.agent_session_id == fork_id,
            )
            .values(**values)
            .returning(AgentSession)
            .execution_options(populate_existing=True)
        )
        return (await self.db.execute(statement)).scalar_one()

    async def copy_messages(self, fork_id: uuid.UUID, piece: Piece) -> tuple[int, int]:
        """Copy the messages of ``piece`` into the fork, with their retractions and
        redactions; the tokens and the stored bytes copied."""
        columns = ("seq", "role", "turn", "message", "token_count", "content_text", "metadata")
        source = [getattr(Message, "metadata_" if c == "metadata" else c) for c in columns]
        await self.db.execute(
            insert(Message).from_select(
                ["tenant_id", "agent_session_id", *columns, "created_at"],
                select(Message.tenant_id, literal(fork_id), *source, Message.created_at).where(
                    in_piece(self.scope, piece)
                ),
            )
        )
        await self.db.execute(
            insert(MessageRetraction).from_select(
                ["tenant_id", "agent_session_id", "seq", "retracted_at"],
                select(
                    MessageRetraction.tenant_id,
                    literal(fork_id),
                    MessageRetraction.seq,
                    MessageRetraction.retracted_at,
                ).where(in_piece(self.scope, piece, MessageRetraction)),
            )
        )
        await self.db.execute(
            insert(MessageRedaction).from_select(
                ["tenant_id", "agent_session_id", "seq", "redacted_by", "reason", "redacted_at"],
                select(
                    MessageRedaction.tenant_id,
                    literal(fork_id),
                    MessageRedaction.seq,
                    MessageRedaction.redacted_by,
                    MessageRedaction.reason,
                    MessageRedaction.redacted_at,
                ).where(in_piece(self.scope, piece, MessageRedaction)),
            )
        )
        # Counted as the append counts them: the JSON text of each message and its metadata.
        row = (
            await self.db.execute(
                select(
                    func.coalesce(func.sum(Message.token_count), 0),
                    func.coalesce(
                        func.sum(
                            func.octet_length(cast(Message.message, Text))
                            + func.coalesce(func.octet_length(cast(Message.metadata_, Text)), 0)
                        ),
                        0,
                    ),
                ).where(in_piece(self.scope, piece))
            )
        ).one()
        return int(row[0]), int(row[1])

    async def has_forks(self, agent_session_id: uuid.UUID) -> bool:
        """Whether a fork names the agent session as its parent or reads its rows."""
        found = await self.db.scalar(
            select(
                or_(
                    exists().where(
                        AgentSession.tenant_id == self.scope.tenant_id,
                        AgentSession.parent_session_id == agent_session_id,
                    ),
                    exists().where(
                        AgentSessionLineage.tenant_id == self.scope.tenant_id,
                        AgentSessionLineage.ancestor_session_id == agent_session_id,
                    ),
                )
            )
        )
        return bool(found)
