"""A recorded context rebuilt from the rows it names, pure: the same functions that assembled it,
given the same inputs, write the same bytes.

Owns the order of the parts (summary, ``[Relevant Memories]``, ``[Pinned]``, covered then
unsummarised raw messages) and the rewriting of a cleared tool result; the texts come from the
context modules (``summary``, ``recall``, ``pinned``, ``clearing``, ``outgoing``, ``hint``), so a
rebuild can never drift from an assembly. Never reads anything; never decides what was sent (the
ledger row did).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from app.archives.working_memory import WorkingMemory
from app.context.assembly import CUT_NOTE
from app.context.clearing import call_names, placeholder
from app.context.hint import ArchiveRange, system_prompt_addition
from app.context.outgoing import outgoing
from app.context.pinned import pinned_block
from app.context.recall import recall_block
from app.context.summary import summarise
from app.ledger.records import HintSpec
from app.memories.records import SearchHit
from app.pins.records import Pin
from app.sessions.records import StoredMessage
from app.wm.tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class Rebuilt:
    messages: list[dict[str, Any]]
    system_prompt_addition: str
    summary: str | None
    memories: str | None
    pinned: str | None


def raw_messages(
    sent: Sequence[StoredMessage], *, cleared: Collection[int], messages_path: str
) -> list[dict[str, Any]]:
    """The raw messages as the context sent them: cleared tool results as their placeholder
    (the tool named by the call before them), every message as the chat API accepts it."""
    names: dict[str, str] = {}
    messages: list[dict[str, Any]] = []
    for stored in sent:
        message: dict[str, Any] = dict(stored.message)
        names.update(call_names(message))
        if stored.seq in cleared:
            name = names.get(str(message.get("tool_call_id")), "a tool")
            text = placeholder(name, stored.token_count, stored.seq, messages_path)
            message = {**message, "content": text}
        messages.append(outgoing(message)[0])
    return messages


def hint_text(
    spec: HintSpec,
    agent_session_id: str,
    *,
    summary_archive_seq: int | None,
    summary_covered_end_seq: int | None,
) -> str:
    """``system_prompt_addition`` as the recorded context was told it."""
    if spec.form == "omitted":
        return ""
    summary_archive = (
        None
        if summary_archive_seq is None
        else ArchiveRange(summary_archive_seq, 1, summary_covered_end_seq or 0)
    )
    with_summary = spec.form == "with_summary"
    text = system_prompt_addition(
        agent_session_id,
        summary_archive=summary_archive,
        index=[ArchiveRange(*archive) for archive in spec.archives],
        listed=max(1, len(spec.archives)),
        summary_sent=with_summary,
        fill=spec.fill and with_summary,
    )
    return f"{text} {CUT_NOTE}" if spec.cut_note and text else text


def rebuild(
    *,
    working_memory: WorkingMemory | None,
    summary_layer: int,
    recalled: Sequence[SearchHit],
    memories_tokens: int,
    pins: Sequence[Pin],
    pinned_tokens: int,
    sent: Sequence[StoredMessage],
    cleared: Collection[int],
    messages_path: str,
    hint: str,
    counter: TokenCounter,
) -> Rebuilt:
    """The messages of a recorded context: each block rebuilt within the room it had (the same
    inputs in the same room give the same text), then the raw messages."""
    summary = None
    if working_memory is not None:
        summary = summarise(working_memory, summary_layer, counter).text
    memories = recall_block(recalled, memories_tokens, counter).text if recalled else None
    pinned = pinned_block(pins, pinned_tokens, counter).text if pins else None
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": text}
        for text in (summary, memories, pinned)
        if text is not None
    ]
    messages += raw_messages(sent, cleared=cleared, messages_path=messages_path)
    return Rebuilt(messages, hint, summary, memories, pinned)
