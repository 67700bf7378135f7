"""What an assembled context was made of, as a ledger entry. Pure: no I/O.

Reads the ``AssembledContext`` the context service decided and names its parts by id, seq and
hash; never keeps a text, and never changes what was sent.
"""

from __future__ import annotations

import hashlib

from app.context.assembly import CUT_NOTE
from app.context.hint import listed_archives
from app.context.service import AssembledContext
from app.ledger.records import (
    HintSpec,
    LedgerEntry,
    MemoryRef,
    SectionRef,
    messages_sha256,
    text_sha256,
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _sections(context: AssembledContext) -> tuple[SectionRef, ...]:
    working_memory = context.working_memory
    if working_memory is None:
        return ()
    if working_memory.legacy_text is not None:
        return (SectionRef(None, working_memory.archive_seq, _sha(working_memory.legacy_text)),)
    return tuple(
        SectionRef(section.value, working_memory.archive_seq, _sha(body))
        for section, body in working_memory.sections.items()
    )


def _hint(context: AssembledContext) -> HintSpec:
    result = context.assembly
    listed = listed_archives(context.budget.usable)
    archives = tuple((a.archive_seq, a.start_seq, a.end_seq) for a in context.index[:listed])
    if result.hint_omitted:
        form = "omitted"
    elif result.summary is not None and result.summary.text is not None:
        form = "with_summary"
    else:
        form = "without_summary"
    return HintSpec(
        form=form,
        cut_note=result.system_prompt_addition.endswith(CUT_NOTE),
        fill=context.fill,
        archives=archives,
    )


def ledger_entry(context: AssembledContext, *, source: str) -> LedgerEntry:
    """The ledger entry of one assembled context, from the request ``source``."""
    result, budget = context.assembly, context.budget
    working_memory = context.working_memory
    tail = result.included_seqs
    filled = tuple(message.seq for message in result.filled)
    sent = {*tail, *filled}
    redacted = sorted(
        message.seq
        for message in (*context.window.candidates, *result.filled)
        if message.seq in sent and message.redacted_at is not None
    )
    summary_text = None if result.summary is None else result.summary.text
    recall = context.recall
    options: dict[str, object] = {
        "token_budget": budget.budget,
        "reserve_tokens": budget.reserved,
        "fill": context.fill,
        "clear_tool_results": None if context.clearing is None else context.clearing.keep,
        "clear_tool_results_exclude": []
        if context.clearing is None
        else sorted(context.clearing.excluded),
        "clear_messages_path": None if context.clearing is None else context.clearing.messages_path,
        # The seq ranges the context was assembled from: its window of unsummarised messages,
        # and the covered messages fill read (``null``: none).
        "read": {
            "floor_seq": context.window.floor_seq,
            "start_seq": context.window.start_seq,
            "last_seq": context.window.last_seq,
            "covered_start_seq": context.covered_start_seq,
        },
        "recall": None
        if recall is None
        else {
            "query_sha256": _sha(recall.query.text),
            "limit": recall.limit,
            "min_score": recall.min_score,
            "found": context.recalled,
            "left_out": result.recall.left_out,
        },
    }
    return LedgerEntry(
        agent_session_id=context.agent_session.agent_session_id,
        source=source,
        summary_archive_seq=None if working_memory is None else working_memory.archive_seq,
        summary_covered_end_seq=None if working_memory is None else working_memory.covered_end_seq,
        summary_sections=_sections(context),
        summary_layer=result.summary_layer,
        pin_ids=tuple(pin.pin_id for pin in context.pins),
        pins_sent=len(result.pinned.included),
        memories=tuple(
            MemoryRef(
                hit.memory.memory_id,
                hit.score,
                _sha(hit.memory.content),
                hit.memory.updated_at.isoformat(),
            )
            for hit in result.recall.included
        ),
        tail_seqs=tail,
        filled_seqs=filled,
        cleared_seqs=tuple(sorted(seq for seq, _ in result.cleared)),
        retracted_seqs=context.retracted,
        redacted_seqs=tuple(redacted),
        options=options,
        tokens={
            "budget": budget.budget,
            "reserved": budget.reserved,
            "usable": budget.usable,
            "wm_layer": result.wm_layer,
            "system_prompt_addition": result.hint_tokens,
            "wm": result.wm_tokens,
            "memories": result.recall.tokens,
            "pinned": result.pinned.tokens,
            "messages": result.message_tokens,
            "filled": result.filled_tokens,
            "total": result.total,
            "over_budget": result.over_budget,
        },
        hint=_hint(context),
        parts_sha256={
            "summary": text_sha256(summary_text),
            "memories": text_sha256(result.recall.text),
            "pinned": text_sha256(result.pinned.text),
            "system_prompt_addition": _sha(result.system_prompt_addition),
        },
        message_count=len(result.messages),
        messages_sha256=messages_sha256(result.messages),
    )
