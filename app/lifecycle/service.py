"""Redacting a message: its content replaced by ``[redacted]`` everywhere it is stored or indexed.

The message keeps its seq, role, turn and token count; its content leaves the history-search
index with it (the index is an expression over the stored text). What was drawn from it goes
too: working-memory items citing it in any section version (and the archive overviews rendered
from them), long-term memories drawn from it and their history, pins made from it, and stored
idempotency answers that repeat it. A redaction row records who (the key), when and why.
Live or archived messages alike; redacting twice changes nothing the second time. Flushes,
never commits.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic_core
from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.jobs import abstract_of
from app.archives.prepared_repository import PreparedRepository
from app.errors import Conflict, NotFound
from app.lifecycle.repository import RedactionRepository, RedactionRow
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal
from app.wm.provenance import sources_from_json
from app.wm.redaction import REDACTED, redact_section
from app.wm.sections import SECTIONS, render
from app.wm.tokens import count_tokens

_STRUCTURAL = frozenset({"role", "tool_call_id"})


@dataclass(frozen=True, slots=True)
class RedactionCounts:
    working_memory_items: int = 0
    archives: int = 0
    memories: int = 0
    memory_events: int = 0
    pins: int = 0
    idempotency_answers: int = 0


@dataclass(frozen=True, slots=True)
class Redaction:
    row: RedactionRow
    role: str
    archived: bool
    already_redacted: bool
    counts: RedactionCounts


def redacted_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """The message with its content replaced: role and the ids that pair tool calls with their
    results kept (a context stays well formed); tool-call arguments emptied; the rest dropped."""
    redacted: dict[str, Any] = {key: message[key] for key in _STRUCTURAL if key in message}
    redacted["content"] = REDACTED
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        kept: list[dict[str, Any]] = []
        for call in calls:
            if not isinstance(call, Mapping):
                continue
            function = call.get("function")
            name = function.get("name") if isinstance(function, Mapping) else None
            kept.append(
                {
                    **{key: call[key] for key in ("id", "type") if key in call},
                    "function": {"name": name if isinstance(name, str) else "", "arguments": "{}"},
                }
            )
        redacted["tool_calls"] = kept
    return redacted


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def quoted_strings(original: Mapping[str, Any], redacted: Mapping[str, Any]) -> list[bytes]:
    """The JSON encodings of the message's strings the redaction removed, longest first (how
    a stored answer quotes them)."""
    kept = set(_strings(redacted))
    removed = {text for text in _strings(original) if text not in kept and text}
    return sorted((pydantic_core.to_json(text) for text in removed), key=len, reverse=True)


class RedactionService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.agent_sessions = AgentSessionService(db, principal)
        self.redactions = RedactionRepository(db, principal.scope)

    async def redact(self, agent_session_id: uuid.UUID, seq: int, reason: str | None) -> Redaction:
        # The row lock orders this against a commit (which starts a new working memory).
        agent_session = await self.agent_sessions.get(agent_session_id, lock=True)
        archived = seq <= agent_session.archived_upto_seq
        message = (
            None
            if seq > agent_session.last_seq
            else await self.redactions.message(agent_session_id, seq)
        )
        if message is None and seq <= agent_session.last_seq:
            holder = await self.agent_sessions.holder_of(agent_session_id, seq)
            raise Conflict(
                f"message {seq} is shared with agent session {holder}, this fork's ancestor; "
                "redact it there, and it is redacted for every fork that shares it"
            )
        if message is None:
            raise NotFound(f"message {seq} not found")
        done = await self.redactions.redaction(agent_session_id, seq)
        if done is not None:
            return Redaction(done, message.role, archived, True, RedactionCounts())
        unfinished = await self.redactions.unfinished_archive_after(agent_session_id, seq)
        if unfinished is not None:
            raise Conflict(
                f"archive {unfinished} is being generated from this agent session's messages; "
                "redact once it is done or failed"
            )
        original = dict(message.message)
        replacement = redacted_message(original)
        await self.redactions.replace_message(agent_session_id, seq, replacement)
        # What was prepared ahead from the message goes with it (a live message is its agent
        # session's own: a fork holds copies of the live messages it was made with).
        await PreparedRepository(self.db, self.principal.scope).drop(agent_session_id)
        row = await self.redactions.record(agent_session_id, seq, self.principal.api_key_id, reason)
        items, archives = await self._working_memory(agent_session_id, seq)
        memory_ids = await self.redactions.redact_memories(agent_session_id, seq)
        events = await self.redactions.redact_memory_events(agent_session_id, seq, memory_ids)
        pins = await self.redactions.redact_pins(agent_session_id, seq)
        answers = 0
        for quoted in quoted_strings(original, replacement):
            answers += await self.redactions.redact_answers(quoted, pydantic_core.to_json(REDACTED))
        counts = RedactionCounts(items, archives, len(memory_ids), events, pins, answers)
        return Redaction(row, message.role, archived, False, counts)

    async def _working_memory(self, agent_session_id: uuid.UUID, seq: int) -> tuple[int, int]:
        """Items citing the message redacted in every section version; the overviews of the
        archives whose sections changed rendered again. The numbers of items and archives."""
        items = 0
        changed: set[int] = set()
        for version in await self.redactions.versions_citing(agent_session_id, seq):
            sources = sources_from_json(version.sources)
            redacted = redact_section(version.content, sources, seq)
            if redacted is None:
                continue
            content, new_sources = redacted
            items += sum(1 for old, new in zip(sources, new_sources, strict=True) if old != new)
            await self.redactions.rewrite_version(
                agent_session_id,
                version.archive_seq,
                version.section,
                content=content,
                content_sha256=hashlib.sha256(content.encode()).hexdigest(),
                token_count=count_tokens(content),
                sources=[source.as_json() for source in new_sources],
            )
            changed.add(version.archive_seq)
        for archive in await self.redactions.archive_sections(agent_session_id, sorted(changed)):
            if archive.is_legacy:
                continue
            bodies = {section: archive.bodies.get(section.value, "") for section in SECTIONS}
            await self.redactions.rewrite_overview(
                agent_session_id, archive.archive_seq, render(bodies), abstract_of(bodies)
            )
        return items, len(changed)
