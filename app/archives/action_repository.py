"""SQL of ``archive_actions``: the record of each retry and clear of a failed archive.

Scoped to one tenant (and, for a user-bound key, its user's agent sessions, as the archive it
names is). Inserts and reads rows; decides nothing. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import ArchiveAction
from app.tenancy.principal import Scope


class ActionRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def record(
        self,
        agent_session_id: uuid.UUID,
        archive_seq: int,
        *,
        action: str,
        api_key_id: uuid.UUID | None,
        reason: str | None,
    ) -> None:
        await self.db.execute(
            insert(ArchiveAction).values(
                tenant_id=self.scope.tenant_id,
                agent_session_id=agent_session_id,
                archive_seq=archive_seq,
                action=action,
                actor="operator" if api_key_id is None else "api_key",
                api_key_id=api_key_id,
                reason=reason,
            )
        )

    async def of_archive(
        self, agent_session_id: uuid.UUID, archive_seq: int
    ) -> Sequence[ArchiveAction]:
        """The archive's actions, oldest first (the caller has already seen the archive)."""
        return (
            await self.db.scalars(
                select(ArchiveAction)
                .where(
                    ArchiveAction.tenant_id == self.scope.tenant_id,
                    ArchiveAction.agent_session_id == agent_session_id,
                    ArchiveAction.archive_seq == archive_seq,
                )
                .order_by(ArchiveAction.action_id)
            )
        ).all()
