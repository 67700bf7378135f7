"""An operator's actions on a failed archive: retry (queue it again) and clear (set it aside for
good, the next archive covering its messages), each recorded in ``archive_actions`` in the same
transaction with the key that asked (none from the command line) and the reason given.

Only a failed archive is retried or cleared (409 otherwise, 404 for one the scope cannot see).
Never commits and never wakes a worker (the edge does both).
"""

from __future__ import annotations

import uuid
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.action_repository import ActionRepository
from app.archives.repository import ArchiveRepository
from app.errors import Conflict, NotFound
from app.models import Archive, ArchiveStatus
from app.tenancy.principal import Scope

Action = Literal["retry", "clear"]


class ArchiveActions:
    """``api_key_id``: the key that asks (``None``: the operator, from the command line)."""

    def __init__(self, db: AsyncSession, scope: Scope, api_key_id: uuid.UUID | None) -> None:
        self.archives = ArchiveRepository(db, scope)
        self.actions = ActionRepository(db, scope)
        self.api_key_id = api_key_id

    async def retry(
        self, agent_session_id: uuid.UUID, archive_seq: int, reason: str | None = None
    ) -> Archive:
        await self._failed(agent_session_id, archive_seq, "retry")
        await self.archives.reschedule(
            agent_session_id,
            archive_seq,
            delay_s=0,
            attempt=0,
            last_error=None,
            error_stage=None,
            finished_at=None,
        )
        return await self._recorded(agent_session_id, archive_seq, "retry", reason)

    async def clear(
        self, agent_session_id: uuid.UUID, archive_seq: int, reason: str | None = None
    ) -> Archive:
        """Set a failed archive aside for good; the next archive covers its messages."""
        await self._failed(agent_session_id, archive_seq, "clear")
        await self.archives.set_fields(
            agent_session_id, archive_seq, status=ArchiveStatus.CLEARED, lease_until=None
        )
        return await self._recorded(agent_session_id, archive_seq, "clear", reason)

    async def _failed(self, agent_session_id: uuid.UUID, archive_seq: int, action: Action) -> None:
        archive = await self.archives.get(agent_session_id, archive_seq, lock=True)
        if archive is None:
            raise NotFound(f"archive {archive_seq} of agent session {agent_session_id} not found")
        if archive.status != ArchiveStatus.FAILED:
            raise Conflict(f"archive {archive_seq} is {archive.status}; only failed ones {action}")

    async def _recorded(
        self, agent_session_id: uuid.UUID, archive_seq: int, action: Action, reason: str | None
    ) -> Archive:
        await self.actions.record(
            agent_session_id,
            archive_seq,
            action=action,
            api_key_id=self.api_key_id,
            reason=reason,
        )
        archive = await self.archives.get(agent_session_id, archive_seq)
        assert archive is not None  # noqa: S101 - locked above, in this transaction
        return archive
