"""The claim's queue rows of one tenant (``claimable_archives``): an agent session with an
archive to generate, and when it is next due. Written in the transaction that changes the
archive, so the claim (``workmem_claim_archive``) never reads the archives of every tenant
(docs/scaling.md). Flushes, never commits."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Update, func, update
from sqlalchemy.dialects.postgresql import Insert, insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.status import ArchiveStatus
from app.models import ClaimableArchive
from app.tenancy.principal import Scope

FINISHED = frozenset({ArchiveStatus.DONE, ArchiveStatus.FAILED, ArchiveStatus.CLEARED})


class ClaimableRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def follow(self, agent_session_id: uuid.UUID, status: Any, available_at: Any) -> None:
        """An archive of the agent session entered ``status``: pending makes the agent session
        due at ``available_at`` (or sooner); a finished one makes its next archive, if any, due
        at once (the claim removes the row when there is none)."""
        if status == ArchiveStatus.PENDING:
            await self._due(agent_session_id, available_at)
        elif status in FINISHED:
            await self._now(agent_session_id)

    async def _due(self, agent_session_id: uuid.UUID, at: Any) -> None:
        await self.db.execute(self.due(agent_session_id, at))

    def due(self, agent_session_id: uuid.UUID, at: Any) -> Insert:
        """``follow``'s upsert for a pending archive, unsent: the agent session is due at
        ``at`` or sooner (a commit sends it as a ``WITH`` of its archive's insert)."""
        statement = insert(ClaimableArchive).values(
            tenant_id=self.scope.tenant_id, agent_session_id=agent_session_id, available_at=at
        )
        return statement.on_conflict_do_update(
            index_elements=[ClaimableArchive.tenant_id, ClaimableArchive.agent_session_id],
            set_={
                "available_at": func.least(
                    ClaimableArchive.available_at, statement.excluded.available_at
                )
            },
        )

    async def _now(self, agent_session_id: uuid.UUID) -> None:
        await self.db.execute(
            update(ClaimableArchive)
            .where(
                ClaimableArchive.tenant_id == self.scope.tenant_id,
                ClaimableArchive.agent_session_id == agent_session_id,
            )
            .values(available_at=func.now())
        )

    async def finished_with(self, agent_session_id: uuid.UUID, change: Update) -> None:
        """``change`` (an archive entering a finished status) and ``follow``'s update of the
        queue row in one statement: the change runs as a ``WITH`` of the queue row's update
        (Postgres runs a data-modifying ``WITH`` whether or not it is referenced)."""
        await self.db.execute(
            update(ClaimableArchive)
            .add_cte(change.cte("changed"))
            .where(
                ClaimableArchive.tenant_id == self.scope.tenant_id,
                ClaimableArchive.agent_session_id == agent_session_id,
            )
            .values(available_at=func.now())
        )
