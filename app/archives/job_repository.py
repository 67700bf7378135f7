"""SQL of the archive job alone, scoped to one tenant: the messages an archive covers and its
lease (the claim itself is ``app.archives.queue``; the rest of an archive's rows,
``repository``).

Runs under the claimed archive's tenant, with no user-bound scope. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Archive, ArchiveStatus, Message, MessageRetraction
from app.sessions.lineage_repository import LineageReader
from app.sessions.message_repository import in_piece
from app.tenancy.principal import Scope

MESSAGES_PER_ARRAY = 64
"""Messages per JSON array when an archive job reads its messages: few arrays to decode, and
one array stays far below Postgres's 1 GB bound on a value even with 16 MB messages."""


class JobRepository:
    """What an archive job reads and writes beside the archive's own rows."""

    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope
        self.lineage = LineageReader(db, scope)

    async def covered_messages(
        self, agent_session_id: uuid.UUID, start_seq: int, end_seq: int
    ) -> tuple[list[dict[str, Any]], set[int]]:
        """The OpenAI-format messages ``start_seq..end_seq`` in order, and the seqs retracted
        among them. One statement per lineage piece (one for an agent session that is no fork):
        its messages come as JSON arrays of ``MESSAGES_PER_ARRAY``, each decoded at once rather
        than row by row, and its retractions with them."""
        messages: list[dict[str, Any]] = []
        retracted: set[int] = set()
        lineage = await self.lineage.of(agent_session_id)
        for piece in lineage.seq_pieces(start_seq - 1, end_seq):
            chunk = ((Message.seq - 1) // MESSAGES_PER_ARRAY).label("chunk")
            withdrawn = (
                select(func.array_agg(MessageRetraction.seq))
                .where(in_piece(self.scope, piece, MessageRetraction))
                .scalar_subquery()
            )
            rows = await self.db.execute(
                select(func.json_agg(aggregate_order_by(Message.message, Message.seq)), withdrawn)
                .where(in_piece(self.scope, piece))
                .group_by(chunk)
                .order_by(chunk)
            )
            for array, seqs in rows.all():
                messages += array
                retracted.update(seqs or ())
        return messages, retracted

    def _attempt_of(
        self, agent_session_id: uuid.UUID, archive_seq: int, attempt: int
    ) -> tuple[ColumnElement[bool], ...]:
        """The agent session's archive ``archive_seq`` while it runs ``attempt``."""
        return (
            Archive.tenant_id == self.scope.tenant_id,
            Archive.agent_session_id == agent_session_id,
            Archive.archive_seq == archive_seq,
            Archive.status == ArchiveStatus.RUNNING,
            Archive.attempt == attempt,
        )

    async def lock_attempt(
        self, agent_session_id: uuid.UUID, archive_seq: int, *, attempt: int
    ) -> bool:
        """Lock the agent session's own archive ``archive_seq`` if it is running ``attempt``;
        whether it is (only two columns are read: the row is not loaded)."""
        found = await self.db.execute(
            select(Archive.archive_seq)
            .where(*self._attempt_of(agent_session_id, archive_seq, attempt))
            .with_for_update()
        )
        return found.first() is not None

    async def renew_lease(
        self, agent_session_id: uuid.UUID, archive_seq: int, *, attempt: int, lease_s: float
    ) -> bool:
        """Extend a running archive's lease, if it is still this attempt's."""
        result = await self.db.execute(
            update(Archive)
            .where(*self._attempt_of(agent_session_id, archive_seq, attempt))
            .values(lease_until=func.now() + func.make_interval(0, 0, 0, 0, 0, 0, lease_s))
            .returning(Archive.archive_seq)
        )
        return result.first() is not None
