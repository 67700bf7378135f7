"""SQL for archives and section versions, scoped to one tenant; plus the workers' claim.

``claim_next`` is the one privileged statement here: it runs in a system transaction because a
worker serves every tenant; everything after a claim runs under the claimed archive's tenant.
Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Archive, Message, WmSectionVersion


@dataclass(frozen=True, slots=True)
class SplitRow:
    seq: int
    role: str
    has_tool_calls: bool
    token_count: int
    turn: int


@dataclass(frozen=True, slots=True)
class Claim:
    tenant_id: uuid.UUID
    agent_session_id: uuid.UUID
    archive_seq: int
    attempt: int


_CLAIM = text(
    """
    WITH candidate AS (
        SELECT a.tenant_id, a.agent_session_id, a.archive_seq
        FROM archives a
        WHERE a.status IN ('pending', 'running')
          AND a.available_at <= now()
          AND (a.status = 'pending' OR a.lease_until < now())
          AND (CAST(:tenant_id AS uuid) IS NULL OR a.tenant_id = CAST(:tenant_id AS uuid))
          AND (CAST(:agent_session_id AS uuid) IS NULL
               OR a.agent_session_id = CAST(:agent_session_id AS uuid))
          -- Archives of one agent session run strictly in order: only the oldest unfinished one.
          AND NOT EXISTS (
              SELECT 1 FROM archives older
              WHERE older.tenant_id = a.tenant_id
                AND older.agent_session_id = a.agent_session_id
                AND older.archive_seq < a.archive_seq
                AND older.status IN ('pending', 'running')
          )
        ORDER BY a.available_at, a.created_at
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE archives AS a
    SET status = 'running',
        attempt = a.attempt + 1,
        lease_until = now() + make_interval(secs => :lease_s)
    FROM candidate c
    WHERE a.tenant_id = c.tenant_id
      AND a.agent_session_id = c.agent_session_id
      AND a.archive_seq = c.archive_seq
    RETURNING a.tenant_id, a.agent_session_id, a.archive_seq, a.attempt
    """
)


async def claim_next(
    db: AsyncSession,
    *,
    lease_s: float,
    tenant_id: uuid.UUID | None = None,
    agent_session_id: uuid.UUID | None = None,
) -> Claim | None:
    """Claim the oldest claimable archive (optionally of one agent session) for ``lease_s``."""
    row = (
        await db.execute(
            _CLAIM,
            {
                "lease_s": lease_s,
                "tenant_id": None if tenant_id is None else str(tenant_id),
                "agent_session_id": None if agent_session_id is None else str(agent_session_id),
            },
        )
    ).first()
    if row is None:
        return None
    return Claim(tenant_id=row[0], agent_session_id=row[1], archive_seq=row[2], attempt=row[3])


async def requeue_failed(
    db: AsyncSession,
    *,
    tenant_id: uuid.UUID | None = None,
    agent_session_id: uuid.UUID | None = None,
    archive_seq: int | None = None,
) -> list[dict[str, object]]:
    """The operator's re-queue of failed archives (a system transaction, across tenants)."""
    statement = (
        update(Archive)
        .where(Archive.status == "failed")
        .values(
            status="pending",
            attempt=0,
            available_at=func.now(),
            lease_until=None,
            last_error=None,
            error_stage=None,
            finished_at=None,
        )
        .returning(Archive.tenant_id, Archive.agent_session_id, Archive.archive_seq)
    )
    if tenant_id is not None:
        statement = statement.where(Archive.tenant_id == tenant_id)
    if agent_session_id is not None:
        statement = statement.where(Archive.agent_session_id == agent_session_id)
    if archive_seq is not None:
        statement = statement.where(Archive.archive_seq == archive_seq)
    rows = (await db.execute(statement)).all()
    return [
        {"tenant_id": str(row[0]), "agent_session_id": str(row[1]), "archive_seq": row[2]}
        for row in rows
    ]


class ArchiveRepository:
    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.db = db
        self.tenant_id = tenant_id

    def _of(self, agent_session_id: uuid.UUID) -> list[Any]:
        return [Archive.tenant_id == self.tenant_id, Archive.agent_session_id == agent_session_id]

    async def split_rows(
        self, agent_session_id: uuid.UUID, *, after_seq: int, upto_seq: int, limit: int
    ) -> list[SplitRow]:
        """Messages ``after_seq < seq <= upto_seq``, newest first, at most ``limit``."""
        result = await self.db.execute(
            select(
                Message.seq,
                Message.role,
                Message.message.has_key("tool_calls"),
                Message.token_count,
                Message.turn,
            )
            .where(
                Message.tenant_id == self.tenant_id,
                Message.agent_session_id == agent_session_id,
                Message.seq > after_seq,
                Message.seq <= upto_seq,
            )
            .order_by(Message.seq.desc())
            .limit(limit)
        )
        return [SplitRow(*row) for row in result.all()]

    async def turn_of(self, agent_session_id: uuid.UUID, seq: int) -> int | None:
        return await self.db.scalar(
            select(Message.turn).where(
                Message.tenant_id == self.tenant_id,
                Message.agent_session_id == agent_session_id,
                Message.seq == seq,
            )
        )

    async def insert(self, values: dict[str, Any]) -> Archive:
        result = await self.db.execute(
            insert(Archive).values(tenant_id=self.tenant_id, **values).returning(Archive)
        )
        return result.scalar_one()

    async def get(
        self, agent_session_id: uuid.UUID, archive_seq: int, *, lock: bool = False
    ) -> Archive | None:
        statement = select(Archive).where(
            *self._of(agent_session_id), Archive.archive_seq == archive_seq
        )
        if lock:
            statement = statement.with_for_update()
        return await self.db.scalar(statement.execution_options(populate_existing=True))

    async def page(
        self, agent_session_id: uuid.UUID, *, before_seq: int | None, limit: int
    ) -> Sequence[Archive]:
        statement = select(Archive).where(*self._of(agent_session_id))
        if before_seq is not None:
            statement = statement.where(Archive.archive_seq < before_seq)
        statement = statement.order_by(Archive.archive_seq.desc()).limit(limit)
        return (await self.db.scalars(statement)).all()

    async def newest_done(
        self, agent_session_id: uuid.UUID, *, before_seq: int | None = None
    ) -> Archive | None:
        statement = select(Archive).where(*self._of(agent_session_id), Archive.status == "done")
        if before_seq is not None:
            statement = statement.where(Archive.archive_seq < before_seq)
        return await self.db.scalar(statement.order_by(Archive.archive_seq.desc()).limit(1))

    async def failed_between(
        self, agent_session_id: uuid.UUID, *, after_seq: int, before_seq: int
    ) -> Sequence[Archive]:
        return (
            await self.db.scalars(
                select(Archive)
                .where(
                    *self._of(agent_session_id),
                    Archive.archive_seq > after_seq,
                    Archive.archive_seq < before_seq,
                    Archive.status == "failed",
                )
                .order_by(Archive.archive_seq)
            )
        ).all()

    async def sections(
        self, agent_session_id: uuid.UUID, archive_seq: int
    ) -> Sequence[WmSectionVersion]:
        return (
            await self.db.scalars(
                select(WmSectionVersion)
                .where(
                    WmSectionVersion.tenant_id == self.tenant_id,
                    WmSectionVersion.agent_session_id == agent_session_id,
                    WmSectionVersion.archive_seq == archive_seq,
                )
                .order_by(WmSectionVersion.position)
            )
        ).all()

    async def history(
        self,
        agent_session_id: uuid.UUID,
        *,
        section: str | None,
        after_archive_seq: int,
        limit: int,
    ) -> Sequence[WmSectionVersion]:
        statement = select(WmSectionVersion).where(
            WmSectionVersion.tenant_id == self.tenant_id,
            WmSectionVersion.agent_session_id == agent_session_id,
            WmSectionVersion.archive_seq > after_archive_seq,
        )
        if section is not None:
            statement = statement.where(WmSectionVersion.section == section)
        statement = statement.order_by(
            WmSectionVersion.archive_seq, WmSectionVersion.position
        ).limit(limit)
        return (await self.db.scalars(statement)).all()

    async def messages(
        self, agent_session_id: uuid.UUID, ranges: Sequence[tuple[int, int]]
    ) -> Sequence[Message]:
        rows: list[Message] = []
        for start_seq, end_seq in ranges:
            rows += (
                await self.db.scalars(
                    select(Message)
                    .where(
                        Message.tenant_id == self.tenant_id,
                        Message.agent_session_id == agent_session_id,
                        Message.seq >= start_seq,
                        Message.seq <= end_seq,
                    )
                    .order_by(Message.seq)
                )
            ).all()
        return rows

    async def insert_sections(self, rows: Sequence[dict[str, Any]]) -> None:
        await self.db.execute(
            insert(WmSectionVersion), [{"tenant_id": self.tenant_id, **row} for row in rows]
        )

    async def set_fields(
        self, agent_session_id: uuid.UUID, archive_seq: int, **values: Any
    ) -> None:
        await self.db.execute(
            update(Archive)
            .where(*self._of(agent_session_id), Archive.archive_seq == archive_seq)
            .values(**values)
        )

    async def reschedule(
        self, agent_session_id: uuid.UUID, archive_seq: int, *, delay_s: float, **values: Any
    ) -> None:
        await self.set_fields(
            agent_session_id,
            archive_seq,
            status="pending",
            lease_until=None,
            available_at=func.now() + func.make_interval(0, 0, 0, 0, 0, 0, delay_s),
            **values,
        )
