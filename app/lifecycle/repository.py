"""SQL of redaction: the message, its redaction row, and what was derived from the message.

Every statement is scoped to the repository's tenant (row-level security backs it up). Flushes,
never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    LargeBinary,
    and_,
    any_,
    bindparam,
    case,
    cast,
    func,
    literal,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import (
    Archive,
    IdempotencyKey,
    Memory,
    MemoryEvent,
    Message,
    MessageRedaction,
    Pin,
    PinEvent,
    WmSectionVersion,
)
from app.tenancy.principal import Scope
from app.wm.redaction import REDACTED

UNFINISHED = ("pending", "running")


@dataclass(frozen=True, slots=True)
class RedactionRow:
    seq: int
    redacted_by: uuid.UUID
    reason: str | None
    redacted_at: datetime


@dataclass(frozen=True, slots=True)
class SectionVersionRow:
    archive_seq: int
    section: str
    content: str
    sources: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ArchiveSections:
    archive_seq: int
    is_legacy: bool
    bodies: Mapping[str, str]


class RedactionRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.tenant_id = scope.tenant_id

    async def message(self, agent_session_id: uuid.UUID, seq: int) -> Message | None:
        return await self.db.scalar(
            select(Message).where(
                Message.tenant_id == self.tenant_id,
                Message.agent_session_id == agent_session_id,
                Message.seq == seq,
            )
        )

    async def redaction(self, agent_session_id: uuid.UUID, seq: int) -> RedactionRow | None:
        row = (
            await self.db.execute(
                select(
                    MessageRedaction.seq,
                    MessageRedaction.redacted_by,
                    MessageRedaction.reason,
                    MessageRedaction.redacted_at,
                ).where(
                    MessageRedaction.tenant_id == self.tenant_id,
                    MessageRedaction.agent_session_id == agent_session_id,
                    MessageRedaction.seq == seq,
                )
            )
        ).first()
        return None if row is None else RedactionRow(*row)

    async def unfinished_archive_after(self, agent_session_id: uuid.UUID, seq: int) -> int | None:
        """An archive being generated that may read the message or carry its items forward."""
        return await self.db.scalar(
            select(Archive.archive_seq)
            .where(
                Archive.tenant_id == self.tenant_id,
                Archive.agent_session_id == agent_session_id,
                Archive.end_seq >= seq,
                Archive.status.in_(UNFINISHED),
            )
            .limit(1)
        )

    async def replace_message(
        self, agent_session_id: uuid.UUID, seq: int, message: Mapping[str, Any]
    ) -> None:
        """The message's content replaced; seq, role, turn and token count kept (the agent
        session's counters stay true). Its words leave the history-search index with it."""
        await self.db.execute(
            update(Message)
            .where(
                Message.tenant_id == self.tenant_id,
                Message.agent_session_id == agent_session_id,
                Message.seq == seq,
            )
            .values(message=dict(message), content_text=REDACTED)
        )

    async def record(
        self, agent_session_id: uuid.UUID, seq: int, redacted_by: uuid.UUID, reason: str | None
    ) -> RedactionRow:
        row = (
            await self.db.execute(
                pg_insert(MessageRedaction)
                .values(
                    tenant_id=self.tenant_id,
                    agent_session_id=agent_session_id,
                    seq=seq,
                    redacted_by=redacted_by,
                    reason=reason,
                )
                .returning(
                    MessageRedaction.seq,
                    MessageRedaction.redacted_by,
                    MessageRedaction.reason,
                    MessageRedaction.redacted_at,
                )
            )
        ).one()
        return RedactionRow(*row)

    async def versions_citing(
        self, agent_session_id: uuid.UUID, seq: int
    ) -> list[SectionVersionRow]:
        """Section versions with an item whose sources name ``seq``."""
        cited = cast(literal(f'[{{"seqs": [{int(seq)}]}}]'), JSONB)
        rows = await self.db.execute(
            select(
                WmSectionVersion.archive_seq,
                WmSectionVersion.section,
                WmSectionVersion.content,
                WmSectionVersion.sources,
            )
            .where(
                WmSectionVersion.tenant_id == self.tenant_id,
                WmSectionVersion.agent_session_id == agent_session_id,
                WmSectionVersion.sources.op("@>")(cited),
            )
            .order_by(WmSectionVersion.archive_seq, WmSectionVersion.position)
        )
        return [SectionVersionRow(*row) for row in rows.all()]

    async def rewrite_version(
        self,
        agent_session_id: uuid.UUID,
        archive_seq: int,
        section: str,
        *,
        content: str,
        content_sha256: str,
        token_count: int,
        sources: list[dict[str, object]],
    ) -> None:
        await self.db.execute(
            update(WmSectionVersion)
            .where(
                WmSectionVersion.tenant_id == self.tenant_id,
                WmSectionVersion.agent_session_id == agent_session_id,
                WmSectionVersion.archive_seq == archive_seq,
                WmSectionVersion.section == section,
            )
            .values(
                content=content,
                content_sha256=content_sha256,
                token_count=token_count,
                sources=sources,
            )
        )

    async def archive_sections(
        self, agent_session_id: uuid.UUID, archive_seqs: Sequence[int]
    ) -> list[ArchiveSections]:
        archives = await self.db.execute(
            select(Archive.archive_seq, Archive.is_legacy).where(
                Archive.tenant_id == self.tenant_id,
                Archive.agent_session_id == agent_session_id,
                Archive.archive_seq.in_(sorted(set(archive_seqs))),
            )
        )
        versions = await self.db.execute(
            select(
                WmSectionVersion.archive_seq, WmSectionVersion.section, WmSectionVersion.content
            ).where(
                WmSectionVersion.tenant_id == self.tenant_id,
                WmSectionVersion.agent_session_id == agent_session_id,
                WmSectionVersion.archive_seq.in_(sorted(set(archive_seqs))),
            )
        )
        bodies: dict[int, dict[str, str]] = {}
        for archive_seq, section, content in versions.all():
            bodies.setdefault(archive_seq, {})[section] = content
        return [
            ArchiveSections(archive_seq, is_legacy, bodies.get(archive_seq, {}))
            for archive_seq, is_legacy in archives.all()
        ]

    async def rewrite_overview(
        self, agent_session_id: uuid.UUID, archive_seq: int, overview: str, abstract: str
    ) -> None:
        await self.db.execute(
            update(Archive)
            .where(
                Archive.tenant_id == self.tenant_id,
                Archive.agent_session_id == agent_session_id,
                Archive.archive_seq == archive_seq,
            )
            .values(overview=overview, abstract=abstract)
        )

    async def redact_memories(self, agent_session_id: uuid.UUID, seq: int) -> list[uuid.UUID]:
        """Long-term memories drawn from the message: their content becomes ``[redacted]`` and
        their vector goes (a vector of the old text would still find it by meaning). Their
        embedder becomes ``[redacted]``: every vector search compares one embedder's vectors
        only, so none compares them, and re-embedding passes them by."""
        rows = await self.db.scalars(
            update(Memory)
            .where(
                Memory.tenant_id == self.tenant_id,
                Memory.agent_session_id == agent_session_id,
                literal(seq) == any_(Memory.source_seqs),
            )
            .values(
                content=REDACTED,
                slot_value=None,
                embedding=None,
                embedding_model=REDACTED,
                updated_at=func.now(),
            )
            .returning(Memory.memory_id)
        )
        return list(rows.all())

    async def redact_memory_events(
        self, agent_session_id: uuid.UUID, seq: int, memory_ids: Sequence[uuid.UUID]
    ) -> int:
        """The history of those memories, and every event drawn from the message: their
        content becomes ``[redacted]`` (an absent side stays absent)."""
        drawn = and_(
            MemoryEvent.agent_session_id == agent_session_id,
            literal(seq) == any_(MemoryEvent.source_seqs),
        )
        about = or_(
            MemoryEvent.memory_id.in_(memory_ids), MemoryEvent.related_memory_id.in_(memory_ids)
        )
        where = or_(drawn, about) if memory_ids else drawn
        result = await self.db.execute(
            update(MemoryEvent)
            .where(MemoryEvent.tenant_id == self.tenant_id, where)
            .values(
                old_content=case((MemoryEvent.old_content.is_(None), None), else_=REDACTED),
                new_content=case((MemoryEvent.new_content.is_(None), None), else_=REDACTED),
            )
        )
        return _count(result)

    async def redact_pins(self, agent_session_id: uuid.UUID, seq: int) -> int:
        """Pins made from the message, and their history: their text becomes ``[redacted]``."""
        pinned = await self.db.execute(
            update(Pin)
            .where(
                Pin.tenant_id == self.tenant_id,
                Pin.agent_session_id == agent_session_id,
                Pin.message_seq == seq,
            )
            .values(text=REDACTED)
        )
        await self.db.execute(
            update(PinEvent)
            .where(
                PinEvent.tenant_id == self.tenant_id,
                PinEvent.agent_session_id == agent_session_id,
                PinEvent.message_seq == seq,
            )
            .values(text=REDACTED)
        )
        return _count(pinned)

    async def redact_answers(self, quoted: bytes, replacement: bytes) -> int:
        """Stored idempotency answers that quote the message (an append's answer repeats it):
        the quote replaced, so a retry is still answered, without the content."""
        body = IdempotencyKey.response_body
        result = await self.db.execute(
            update(IdempotencyKey)
            .where(
                IdempotencyKey.tenant_id == self.tenant_id,
                body.is_not(None),
                text("position(:quoted IN idempotency_keys.response_body) > 0").bindparams(
                    bindparam("quoted", quoted, type_=LargeBinary)
                ),
            )
            .values(
                response_body=func.convert_to(
                    func.replace(
                        func.convert_from(body, "UTF8"),
                        quoted.decode(),
                        replacement.decode(),
                    ),
                    "UTF8",
                )
            )
        )
        return _count(result)


def _count(result: object) -> int:
    rowcount = getattr(result, "rowcount", 0)
    return int(rowcount or 0)
