"""Recording assembled contexts and reading them back. Flushes, never commits.

A recorded context is one insert in the transaction that assembled it. Reads check that the
caller sees the agent session first (another tenant's or user's answers as missing).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.service import ArchiveService
from app.archives.working_memory import WorkingMemory
from app.context.assembly import Hint, Window
from app.context.budget import plan_budget
from app.context.clearing import Clearing
from app.context.compose import Inputs, finish, first_pass
from app.context.hint import ArchiveRange, system_prompt_addition
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
    records_context,
    text_sha256,
)
from app.ledger.repository import ContextRecordRepository
from app.memories.records import SearchHit
from app.memories.service import MemoryService
from app.models import ContextRecord
from app.pins.records import Pin
from app.pins.service import pins_named
from app.sessions.records import StoredMessage
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

    async def record_if(
        self, context: AssembledContext, asked: bool | None, *, source: str
    ) -> uuid.UUID | None:
        """The ledger row's id when the request (``asked``) or, when it does not say, the agent
        session's default records the context; ``None`` when it is not recorded."""
        if not records_context(asked, session_default=context.agent_session.record_contexts):
            return None
        return (await self.record(context, source=source)).context_id

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
        read = row.options.get("read")
        if read is None:
            loaded = await self.agent_sessions.messages_at(agent_session_id, seqs)
            rebuilt = self._rebuild(row, working_memory, recalled, pins, loaded)
        else:
            loaded = await self._read(row, read)
            rebuilt = self._reassemble(row, read, working_memory, recalled, pins, loaded)
        by_seq = {message.seq: message for message in loaded}
        was_redacted = set(row.redacted_seqs)
        for seq in seqs:
            message = by_seq.get(seq)
            if message is None:
                missing.append(Unavailable("message", str(seq), "erased"))
            elif message.redacted_at is not None and seq not in was_redacted:
                missing.append(Unavailable("message", str(seq), "redacted"))
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

    def _rebuild(
        self,
        row: ContextRecord,
        working_memory: WorkingMemory | None,
        recalled: Sequence[SearchHit],
        pins: Sequence[Pin],
        sent: Sequence[StoredMessage],
    ) -> Rebuilt:
        """A row recorded without its read ranges: each block rebuilt within its room."""
        tokens = row.tokens
        return rebuild(
            working_memory=working_memory if row.parts_sha256.get("summary") is not None else None,
            summary_layer=row.summary_layer,
            recalled=recalled,
            memories_tokens=int(tokens.get("memories", 0)),
            pins=pins if row.pin_ids else [],
            pinned_tokens=int(tokens.get("pinned", 0)),
            sent=sent,
            cleared=set(row.cleared_seqs),
            messages_path=_messages_path(row),
            hint=hint_text(
                HintSpec.from_json(row.hint),
                str(row.agent_session_id),
                summary_archive_seq=row.summary_archive_seq,
                summary_covered_end_seq=row.summary_covered_end_seq,
            ),
            counter=self.counter,
        )

    async def _read(self, row: ContextRecord, read: Mapping[str, Any]) -> list[StoredMessage]:
        """The messages of the ranges the context was assembled from, retracted ones included
        (the row names those it left out), oldest first."""
        floor_seq, last_seq = int(read["floor_seq"]), int(read["last_seq"])
        ranges = [(int(read["start_seq"]), last_seq)]
        if read.get("covered_start_seq") is not None:
            ranges.insert(0, (int(read["covered_start_seq"]), floor_seq))
        loaded: list[StoredMessage] = []
        for first, last in ranges:
            if first <= last:
                loaded += await self.agent_sessions.messages_between(
                    row.agent_session_id, after_seq=first - 1, upto_seq=last, limit=last - first + 1
                )
        return loaded

    def _reassemble(
        self,
        row: ContextRecord,
        read: Mapping[str, Any],
        working_memory: WorkingMemory | None,
        recalled: Sequence[SearchHit],
        pins: Sequence[Pin],
        loaded: Sequence[StoredMessage],
    ) -> Rebuilt:
        """The context assembled again by the same functions, from the same inputs."""
        options = row.options
        retracted = set(row.retracted_seqs)
        floor_seq, start_seq = int(read["floor_seq"]), int(read["start_seq"])
        usable = [m for m in loaded if m.seq not in retracted]
        window = Window([m for m in usable if m.seq >= start_seq], floor_seq, int(read["last_seq"]))
        spec = HintSpec.from_json(row.hint)
        summary_archive = (
            None
            if row.summary_archive_seq is None
            else ArchiveRange(row.summary_archive_seq, 1, row.summary_covered_end_seq or 0)
        )
        index = [ArchiveRange(*archive) for archive in spec.archives]
        agent_session_id = str(row.agent_session_id)
        listed = max(1, len(index))
        hint = Hint(
            system_prompt_addition(
                agent_session_id,
                summary_archive=summary_archive,
                index=index,
                listed=listed,
                fill=spec.fill,
            ),
            system_prompt_addition(
                agent_session_id,
                summary_archive=summary_archive,
                index=index,
                listed=listed,
                summary_sent=False,
            ),
        )
        keep = options.get("clear_tool_results")
        clearing = (
            None
            if keep is None
            else Clearing(
                int(keep),
                _messages_path(row),
                frozenset(options.get("clear_tool_results_exclude") or ()),
            )
        )
        inputs = Inputs(
            plan_budget(int(options["token_budget"]), int(options["reserve_tokens"])),
            window,
            working_memory,
            hint,
            recalled,
            pins,
            clearing,
            bool(options.get("fill")),
        )
        result = first_pass(inputs, self.counter)
        if read.get("covered_start_seq") is not None:
            covered = [m for m in usable if m.seq <= floor_seq]
            result = finish(result, inputs, covered, self.counter)
        return Rebuilt(
            result.messages,
            result.system_prompt_addition,
            None if result.summary is None else result.summary.text,
            result.recall.text,
            result.pinned.text,
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


def _messages_path(row: ContextRecord) -> str:
    return str(
        row.options.get("clear_messages_path") or f"/v1/sessions/{row.agent_session_id}/messages"
    )


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
