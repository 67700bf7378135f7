"""SQL of memory policies: a user's default (``user_memory_policies``) and an agent session's own
(``agent_sessions.memory_policy``), read together for the archive job.

Scoped to one tenant; stores and returns the JSON form of ``policy`` and decides nothing about
it. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import AgentSession, UserMemoryPolicy
from app.tenancy.principal import Scope


@dataclass(frozen=True, slots=True)
class StoredUserPolicy:
    user_id: str
    policy: dict[str, Any]
    updated_by: uuid.UUID
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class AgentSessionPolicies:
    """What an archive job reads of its agent session: the owner's labels (long-term memory's
    scope), the agent session's own policy and its user's default (raw JSON, ``None`` if unset)."""

    user_id: str | None
    agent_id: str | None
    own: dict[str, Any] | None
    users: dict[str, Any] | None


class PolicyStore:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def user_policy(self, user_id: str) -> StoredUserPolicy | None:
        row = (
            await self.db.execute(
                select(
                    UserMemoryPolicy.user_id,
                    UserMemoryPolicy.policy,
                    UserMemoryPolicy.updated_by,
                    UserMemoryPolicy.updated_at,
                ).where(
                    UserMemoryPolicy.tenant_id == self.scope.tenant_id,
                    UserMemoryPolicy.user_id == user_id,
                )
            )
        ).one_or_none()
        return None if row is None else StoredUserPolicy(*row)

    async def set_user_policy(
        self, user_id: str, policy: dict[str, Any], updated_by: uuid.UUID
    ) -> StoredUserPolicy:
        statement = pg_insert(UserMemoryPolicy).values(
            tenant_id=self.scope.tenant_id, user_id=user_id, policy=policy, updated_by=updated_by
        )
        upsert = statement.on_conflict_do_update(
            index_elements=[UserMemoryPolicy.tenant_id, UserMemoryPolicy.user_id],
            set_={
                "policy": statement.excluded.policy,
                "updated_by": statement.excluded.updated_by,
                "updated_at": statement.excluded.updated_at,
            },
        ).returning(
            UserMemoryPolicy.user_id,
            UserMemoryPolicy.policy,
            UserMemoryPolicy.updated_by,
            UserMemoryPolicy.updated_at,
        )
        return StoredUserPolicy(*(await self.db.execute(upsert)).one())

    async def of_agent_session(self, agent_session_id: uuid.UUID) -> AgentSessionPolicies:
        """The agent session's owner labels, its own policy and its user's default, in one
        statement."""
        row = (
            await self.db.execute(
                select(
                    AgentSession.user_id,
                    AgentSession.agent_id,
                    AgentSession.memory_policy,
                    UserMemoryPolicy.policy,
                )
                .outerjoin(
                    UserMemoryPolicy,
                    (UserMemoryPolicy.tenant_id == AgentSession.tenant_id)
                    & (UserMemoryPolicy.user_id == AgentSession.user_id),
                )
                .where(
                    AgentSession.tenant_id == self.scope.tenant_id,
                    AgentSession.agent_session_id == agent_session_id,
                )
            )
        ).one()
        return AgentSessionPolicies(row[0], row[1], row[2], row[3])
