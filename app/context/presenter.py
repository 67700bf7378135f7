"""What the context service decided, as the API's answer: the mapping beside the endpoints, so
the schemas stay leaves."""

from __future__ import annotations

import uuid
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from app.context.schemas import (
    ArchiveIndexEntry,
    ClearingStats,
    ContextRead,
    ContextStats,
    ContextTokens,
    ContextWorkingMemory,
    DroppedMessage,
    InContext,
    PinStats,
    PreservedTail,
    RecalledMemory,
    RecallStats,
    SeqRange,
    WmCutRead,
)
from app.context.service import AssembledContext
from app.models import Archive


def _in_context(archive: Archive, floor_seq: int, included: Sequence[int]) -> InContext:
    if archive.end_seq <= floor_seq:
        return "summary"
    count = bisect_right(included, archive.end_seq) - bisect_left(included, archive.start_seq)
    if count == 0:
        return "none"
    return "raw" if count == archive.end_seq - archive.start_seq + 1 else "partial"


def context_read(context: AssembledContext, context_id: uuid.UUID | None = None) -> ContextRead:
    """What one context request decided, as its answer (``context_id``: its ledger row)."""
    agent_session, budget, index = context.agent_session, context.budget, context.index
    result, window, working_memory = context.assembly, context.window, context.working_memory
    included = result.included_seqs
    floor_seq = window.floor_seq
    newest = index[0] if index else None
    tail = None
    if newest is not None and newest.tail_start_seq is not None and newest.tail_end_seq:
        tail = PreservedTail(
            archive_seq=newest.archive_seq,
            start_seq=newest.tail_start_seq,
            end_seq=newest.tail_end_seq,
            message_count=newest.tail_message_count,
            tokens=newest.tail_tokens,
            keep_recent_count=newest.keep_recent_count,
            in_context=bisect_right(included, newest.tail_end_seq)
            - bisect_left(included, newest.tail_start_seq),
        )
    summary = result.summary
    return ContextRead(
        agent_session_id=agent_session.agent_session_id,
        system_prompt_addition=result.system_prompt_addition,
        messages=result.messages,
        working_memory=None
        if working_memory is None
        else ContextWorkingMemory.from_value(working_memory),
        preserved_tail=tail,
        archive_index=[
            ArchiveIndexEntry(
                archive_seq=archive.archive_seq,
                start_seq=archive.start_seq,
                end_seq=archive.end_seq,
                status=archive.status,
                abstract=archive.abstract,
                in_context=_in_context(archive, floor_seq, included),
            )
            for archive in index
        ],
        archive_count=agent_session.archive_count,
        tokens=ContextTokens(
            budget=budget.budget,
            reserved=budget.reserved,
            usable=budget.usable,
            wm_layer=result.wm_layer,
            system_prompt_addition=result.hint_tokens,
            wm=result.wm_tokens,
            memories=result.recall.tokens,
            pinned=result.pinned.tokens,
            messages=result.message_tokens + result.filled_tokens,
            filled=result.filled_tokens,
            total=result.total,
            history_total=agent_session.total_tokens,
            over_budget=result.over_budget,
        ),
        stats=ContextStats(
            messages_unsummarised=agent_session.last_seq - floor_seq,
            messages_included=len(included),
            included_seqs=list(included),
            messages_omitted=sum(end - start + 1 for start, end in result.omitted),
            omitted_ranges=[SeqRange(start_seq=s, end_seq=e) for s, e in result.omitted],
            dropped=[
                DroppedMessage(seq=item.seq, reason=item.reason.value) for item in result.dropped
            ],
            sanitised_messages=result.sanitised,
            newest_user_seq=result.newest_user_seq,
            wm_cuts=[
                WmCutRead(
                    kind=cut.kind.value,
                    section=None if cut.section is None else cut.section.value,
                    removed=cut.removed,
                )
                for cut in (summary.cuts if summary is not None else ())
            ],
            summary_omitted=summary is not None and summary.text is None,
            hint_omitted=result.hint_omitted,
            messages_filled=len(result.filled),
            filled_range=None
            if not result.filled
            else SeqRange(start_seq=result.filled[0].seq, end_seq=result.filled[-1].seq),
            recall=None
            if context.recall is None
            else RecallStats(
                query=context.recall.query.text,
                min_score=context.recall.min_score,
                found=context.recalled,
                memories=[
                    RecalledMemory(
                        id=hit.memory.memory_id,
                        category=hit.memory.category,
                        score=hit.score,
                        updated_at=hit.memory.updated_at,
                    )
                    for hit in result.recall.included
                ],
                left_out=result.recall.left_out,
            ),
            pins=PinStats(
                in_force=len(result.pinned.included) + result.pinned.left_out,
                sent=[pin.pin_id for pin in result.pinned.included],
                left_out=result.pinned.left_out,
            ),
            clearing=None
            if context.clearing is None
            else ClearingStats(
                keep=context.clearing.keep,
                excluded_tools=sorted(context.clearing.excluded),
                cleared=len(result.cleared),
                cleared_seqs=sorted(seq for seq, _ in result.cleared),
                tokens_saved=result.tokens_saved,
            ),
        ),
        context_id=context_id,
    )
