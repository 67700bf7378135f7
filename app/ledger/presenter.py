"""Ledger rows as the API's answer."""

from __future__ import annotations

import uuid
from typing import Any, cast

from app.ledger.records import Rendering
from app.ledger.schemas import (
    ContextRecordRead,
    RecordedMemory,
    RecordedPins,
    RecordedRun,
    RecordedSummary,
    RenderedContext,
    SectionVersionRef,
    Unavailable,
)
from app.models import ContextRecord


def context_record_read(
    row: ContextRecord, render: RenderedContext | None = None
) -> ContextRecordRead:
    summary = None
    if row.summary_archive_seq is not None:
        summary = RecordedSummary(
            archive_seq=row.summary_archive_seq,
            covered_end_seq=row.summary_covered_end_seq or 0,
            layer=row.summary_layer,
            sections=[SectionVersionRef(**ref) for ref in row.summary_sections],
        )
    return ContextRecordRead(
        context_id=row.context_id,
        agent_session_id=row.agent_session_id,
        source=cast(Any, row.source),
        recorded_by=row.recorded_by,
        created_at=row.created_at,
        summary=summary,
        pins=RecordedPins(pin_ids=list(row.pin_ids), sent=row.pins_sent),
        memories=[
            RecordedMemory(
                memory_id=uuid.UUID(ref["memory_id"]),
                score=ref["score"],
                content_sha256=ref["content_sha256"],
                updated_at=ref["updated_at"],
            )
            for ref in row.memories
        ],
        tail=RecordedRun(
            start_seq=row.tail_start_seq, end_seq=row.tail_end_seq, ranges=row.tail_ranges
        ),
        filled=RecordedRun(
            start_seq=row.filled_start_seq, end_seq=row.filled_end_seq, ranges=row.filled_ranges
        ),
        cleared_seqs=list(row.cleared_seqs),
        retracted_seqs=list(row.retracted_seqs),
        redacted_seqs=list(row.redacted_seqs),
        options=row.options,
        tokens=row.tokens,
        hint=row.hint,
        parts_sha256=row.parts_sha256,
        message_count=row.message_count,
        messages_sha256=row.messages_sha256,
        render=render,
    )


def rendered_read(rendering: Rendering) -> RenderedContext:
    return RenderedContext(
        messages=rendering.messages,
        system_prompt_addition=rendering.system_prompt_addition,
        messages_sha256=rendering.messages_sha256,
        matches=rendering.matches,
        system_prompt_addition_matches=rendering.system_prompt_addition_matches,
        unavailable=[
            Unavailable(part=cast(Any, item.part), id=item.id, reason=cast(Any, item.reason))
            for item in rendering.unavailable
        ],
    )
