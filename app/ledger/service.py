"""Recording assembled contexts and reading them back. Flushes, never commits.

A recorded context is one insert in the transaction that assembled it. Reads check that the
caller sees the agent session first (another tenant's or user's answers as missing).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.service import ArchiveService
from app.archives.working_memory import WorkingMemory
from app.context.service import AssembledContext
from app.cursors import decode_cursor, encode_cursor
from app.errors import NotFound
from app.ledger.capture import ledger_entry
from app.ledger.rebuild import Rebuilt, hint_text, rebuild
from app.ledger.records import (
    HintSpec,
    Rendering,
    Unavailable,
    expand_ranges,
    messages_sha256,
    text_sha256,
)
from app.ledger.repository import ContextRecordRepository
from app.memories.records import SearchHit
from app.memories.service import MemoryService
from app.models import ContextRecord
from app.pins.records import Pin
from app.pins.service import pins_named
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal
from app.wm.redaction import REDACTED
from app.wm.sections import Section
from app.wm.tokens import TokenCounter, count_tokens


class LedgerService:
    def __init__(
        self, db: AsyncSession, principal: Principal, counter: TokenCounter = count_tokens
    ) -> None:
        self.db = db
        self.principal = principal
        self.counter = counter
        self.records = ContextRecordRepository(db, principal.scope)
        self.agent_sessions = AgentSessionService(db, principal)
        self.archives = ArchiveService(db, principal)
        self.memories = MemoryService(db, principal)

    async def record(self, context: AssembledContext, *, source: str) -> ContextRecord:
        """One ledger row for a context this transaction assembled (and so already saw)."""
        return await self.records.insert(
            ledger_entry(context, source=source), recorded_by=self.principal.api_key_id
        )

    async def page(
        self, agent_session_id: uuid.UUID, *, cursor: str | None, limit: int
    ) -> tuple[list[ContextRecord], str | None]:
        await self.agent_sessions.get(agent_session_id)
        rows = list(
            await self.records.page(
                agent_session_id,
                before=decode_cursor(cursor) if cursor else None,
                limit=limit + 1,
            )
        )
        if len(rows) <= limit:
            return rows, None
        last = rows[limit - 1]
        return rows[:limit], encode_cursor(last.created_at, last.context_id)

    async def get(self, agent_session_id: uuid.UUID, context_id: uuid.UUID) -> ContextRecord:
        await self.agent_sessions.get(agent_session_id)
        row = await self.records.get(agent_session_id, context_id)
        if row is None:
            raise NotFound(f"recorded context {context_id} not found")
        return row

    async def render(self, row: ContextRecord) -> Rendering:
        """The recorded context's messages rebuilt from the rows it names: the section versions
        of its archive, its memories and pins by id, its messages by seq. Whatever was since
        erased or redacted is named in ``unavailable`` (the hashes then differ)."""
        agent_session_id = row.agent_session_id
        missing: list[Unavailable] = []
        working_memory = None
        if row.summary_archive_seq is not None:
            working_memory = await self.archives.working_memory(
                agent_session_id, archive_seq=row.summary_archive_seq, visible=True
            )
            missing += _summary_changes(row, working_memory)
        recalled = await self._memories(row, missing)
        pins = await pins_named(self.db, self.principal.scope, agent_session_id, row.pin_ids)
        found_pins = {pin.pin_id for pin in pins}
        missing += [
            Unavailable("pin", str(pin_id), "erased")
            for pin_id in row.pin_ids
            if pin_id not in found_pins
        ]
        seqs = expand_ranges([*row.filled_ranges, *row.tail_ranges])
        sent = await self.agent_sessions.messages_at(agent_session_id, seqs)
        found_seqs = {message.seq for message in sent}
        missing += [
            Unavailable("message", str(seq), "erased") for seq in seqs if seq not in found_seqs
        ]
        was_redacted = set(row.redacted_seqs)
        missing += [
            Unavailable("message", str(message.seq), "redacted")
            for message in sent
            if message.redacted_at is not None and message.seq not in was_redacted
        ]
        options, tokens = row.options, row.tokens
        rebuilt = rebuild(
            working_memory=working_memory if row.parts_sha256.get("summary") is not None else None,
            summary_layer=row.summary_layer,
            recalled=recalled,
            memories_tokens=int(tokens.get("memories", 0)),
            pins=pins if row.pin_ids else [],
            pinned_tokens=int(tokens.get("pinned", 0)),
            sent=sent,
            cleared=set(row.cleared_seqs),
            messages_path=str(
                options.get("clear_messages_path") or f"/v1/sessions/{agent_session_id}/messages"
            ),
            hint=hint_text(
                HintSpec.from_json(row.hint),
                str(agent_session_id),
                summary_archive_seq=row.summary_archive_seq,
                summary_covered_end_seq=row.summary_covered_end_seq,
            ),
            counter=self.counter,
        )
        missing += _pin_changes(row, rebuilt, pins)
        digest = messages_sha256(rebuilt.messages)
        return Rendering(
            messages=rebuilt.messages,
            system_prompt_addition=rebuilt.system_prompt_addition,
            messages_sha256=digest,
            matches=digest == row.messages_sha256,
            system_prompt_addition_matches=text_sha256(rebuilt.system_prompt_addition)
            == row.parts_sha256.get("system_prompt_addition"),
            unavailable=tuple(dict.fromkeys(missing)),
        )

    async def _memories(self, row: ContextRecord, missing: list[Unavailable]) -> list[SearchHit]:
        """The recalled memories as they were sent: the content that hashes as recorded (the
        current one, or the one the memory's history holds), stated at the recorded time."""
        hits: list[SearchHit] = []
        for ref in row.memories:
            memory_id = uuid.UUID(str(ref["memory_id"]))
            try:
                memory = await self.memories.get(memory_id)
            except NotFound:
                missing.append(Unavailable("memory", str(memory_id), "erased"))
                continue
            content = memory.content
            if _sha(content) != ref["content_sha256"]:
                events = await self.memories.events(memory_id)
                stated = [
                    text
                    for event in events
                    for text in (event.old_content, event.new_content)
                    if text is not None and _sha(text) == ref["content_sha256"]
                ]
                if not stated:
                    reason = "redacted" if REDACTED in content else "changed"
                    missing.append(Unavailable("memory", str(memory_id), reason))
                content = stated[0] if stated else content
            updated_at = datetime.fromisoformat(str(ref["updated_at"]))
            memory = replace(memory, content=content, updated_at=updated_at)
            hits.append(SearchHit(memory, float(ref["score"]), None, None, 0.0))
        return hits


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _summary_changes(row: ContextRecord, working_memory: WorkingMemory | None) -> list[Unavailable]:
    """The section versions the summary used that are gone or whose content changed since."""
    if working_memory is None:
        return [
            Unavailable("summary", str(ref["section"] or "legacy"), "erased")
            for ref in row.summary_sections
        ]
    changes: list[Unavailable] = []
    for ref in row.summary_sections:
        section = ref["section"]
        if section is None:
            content = working_memory.legacy_text or ""
        else:
            content = working_memory.sections.get(Section(section), "")
        if _sha(content) != ref["content_sha256"]:
            reason = "redacted" if REDACTED in content else "changed"
            changes.append(Unavailable("summary", str(section or "legacy"), reason))
    return changes


def _pin_changes(row: ContextRecord, rebuilt: Rebuilt, pins: Sequence[Pin]) -> list[Unavailable]:
    """The pins redacted since, when the ``[Pinned]`` block no longer hashes as recorded."""
    changes: list[Unavailable] = []
    if text_sha256(rebuilt.pinned) != row.parts_sha256.get("pinned"):
        changes += [
            Unavailable("pin", str(pin.pin_id), "redacted") for pin in pins if REDACTED in pin.text
        ]
    return changes
