"""SQL for the context ledger, scoped to one tenant. One insert per recorded context; reads by
primary key or by the agent session's index, newest first. Flushes, never commits."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import insert, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from app.ledger.records import LedgerEntry, seq_ranges
from app.models import ContextRecord
from app.tenancy.principal import Scope


class ContextRecordRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def insert(self, entry: LedgerEntry, *, recorded_by: uuid.UUID) -> ContextRecord:
        tail, filled = entry.tail_seqs, entry.filled_seqs
        statement = (
            insert(ContextRecord)
            .values(
                tenant_id=self.scope.tenant_id,
                agent_session_id=entry.agent_session_id,
                recorded_by=recorded_by,
                source=entry.source,
                summary_archive_seq=entry.summary_archive_seq,
                summary_covered_end_seq=entry.summary_covered_end_seq,
                summary_sections=[
                    {
                        "section": ref.section,
                        "archive_seq": ref.archive_seq,
                        "content_sha256": ref.content_sha256,
                    }
                    for ref in entry.summary_sections
                ],
                summary_layer=entry.summary_layer,
                pin_ids=list(entry.pin_ids),
                pins_sent=entry.pins_sent,
                memories=[
                    {
                        "memory_id": str(ref.memory_id),
                        "score": ref.score,
                        "content_sha256": ref.content_sha256,
                        "updated_at": ref.updated_at,
                    }
                    for ref in entry.memories
                ],
                tail_start_seq=tail[0] if tail else None,
                tail_end_seq=tail[-1] if tail else None,
                tail_ranges=seq_ranges(tail),
                filled_start_seq=filled[0] if filled else None,
                filled_end_seq=filled[-1] if filled else None,
                filled_ranges=seq_ranges(filled),
                cleared_seqs=list(entry.cleared_seqs),
                retracted_seqs=list(entry.retracted_seqs),
                redacted_seqs=list(entry.redacted_seqs),
                options=dict(entry.options),
                tokens=dict(entry.tokens),
                hint=entry.hint.as_json(),
                parts_sha256=dict(entry.parts_sha256),
                message_count=entry.message_count,
                messages_sha256=entry.messages_sha256,
            )
            .returning(ContextRecord)
        )
        return (await self.db.execute(statement)).scalar_one()

    async def page(
        self,
        agent_session_id: uuid.UUID,
        *,
        before: tuple[datetime, uuid.UUID] | None,
        limit: int,
    ) -> Sequence[ContextRecord]:
        """The agent session's recorded contexts, newest first, before ``(created_at, id)``."""
        statement = select(ContextRecord).where(
            ContextRecord.tenant_id == self.scope.tenant_id,
            ContextRecord.agent_session_id == agent_session_id,
        )
        if before is not None:
            statement = statement.where(
                tuple_(ContextRecord.created_at, ContextRecord.context_id) < tuple_(*before)
            )
        statement = statement.order_by(
            ContextRecord.created_at.desc(), ContextRecord.context_id.desc()
        ).limit(limit)
        return (await self.db.scalars(statement)).all()

    async def get(self, agent_session_id: uuid.UUID, context_id: uuid.UUID) -> ContextRecord | None:
        return await self.db.scalar(
            select(ContextRecord).where(
                ContextRecord.tenant_id == self.scope.tenant_id,
                ContextRecord.agent_session_id == agent_session_id,
                ContextRecord.context_id == context_id,
            )
        )
