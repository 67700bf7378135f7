"""What the context service decided, in OpenViking's shape: the mapping beside the endpoints,
so the schemas stay leaves."""

from __future__ import annotations

import uuid

from app.compat.openviking.ids import archive_id
from app.compat.openviking.parts import to_parts
from app.compat.openviking.schemas import ContextOut, ContextStats, WorkingMemoryText
from app.context.service import AssembledContext
from app.context.summary import SUMMARY_HEADER
from app.sessions.records import StoredMessage


def context_out(context: AssembledContext, context_id: uuid.UUID | None = None) -> ContextOut:
    """The assembled context in OpenViking's shape: the summary (without its header) as the
    overview, the raw messages that fit after it in parts format, and OpenViking's stats."""
    assembly, working_memory = context.assembly, context.working_memory
    summary = assembly.summary
    overview = ""
    if summary is not None and summary.text is not None:
        overview = summary.text.removeprefix(f"{SUMMARY_HEADER}\n\n")
    by_seq = {message.seq: message for message in context.window.candidates}
    included: list[StoredMessage] = [
        *assembly.filled,
        *(by_seq[seq] for seq in assembly.included_seqs),
    ]
    covered = working_memory.archive_seq if working_memory is not None else 0
    failed = sum(
        1
        for archive in context.index
        if archive.status in ("failed", "cleared") and archive.archive_seq > covered
    )
    total = context.agent_session.archive_count
    in_answer = 1 if overview else 0
    return ContextOut(
        latest_archive_overview=overview,
        latest_archive_id=archive_id(covered) if covered else "",
        working_memory=None
        if working_memory is None
        else WorkingMemoryText(markdown=working_memory.markdown),
        pre_archive_abstracts=[],
        messages=to_parts(included),
        estimatedTokens=assembly.wm_tokens + assembly.message_tokens + assembly.filled_tokens,
        stats=ContextStats(
            totalArchives=total,
            includedArchives=in_answer,
            droppedArchives=max(0, total - failed - in_answer),
            failedArchives=failed,
            activeTokens=assembly.message_tokens + assembly.filled_tokens,
            archiveTokens=assembly.wm_tokens,
        ),
        context_id=context_id,
    )
