"""Storing one OpenViking session as one agent session, through the services.

Messages go through the ordinary append path, the archived ones first (then the counters their
commits would have left), then the live ones, so seq, turns, token counts and ``pending_tokens``
are computed exactly as for any message; then the archive rows with the same ranges and status
and their working memory. Flushes, never commits: ``run`` owns the one transaction per session.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.imported import ImportedArchive
from app.archives.jobs import abstract_of
from app.archives.service import ArchiveService
from app.importer.openviking.overview import legacy_abstract
from app.importer.openviking.records import (
    OvArchive,
    OverviewKind,
    OvMessage,
    OvSession,
    Problem,
    ProblemKind,
    keep_window,
    stored_count,
)
from app.sessions.appending import append_within
from app.sessions.maintenance import maintenance_principal
from app.sessions.records import StoredMessage
from app.sessions.schemas import AgentSessionCreate, MessageCreate
from app.sessions.service import AgentSessionService, Limits

SOURCE: Final = "openviking"
"""The key under which an imported agent session's metadata says where it came from."""

MAX_KEEP: Final = 10_000


@dataclass(frozen=True, slots=True)
class Existing:
    """An agent session that already holds this session's ``external_id``; ``fingerprint`` is
    the one recorded at import, ``None`` when it was not imported from this session."""

    agent_session_id: uuid.UUID
    fingerprint: str | None


@dataclass(frozen=True, slots=True)
class Stored:
    agent_session_id: uuid.UUID
    pending_tokens: int
    problems: tuple[Problem, ...]


def agent_session_metadata(session: OvSession) -> dict[str, Any]:
    ref = session.ref
    return {
        SOURCE: {
            "account": ref.account,
            "user": ref.user,
            "session_id": ref.session_id,
            "path": ref.path,
            "fingerprint": session.fingerprint,
            "meta": None if session.meta is None else dict(session.meta),
        }
    }


def session_keep(session: OvSession, limits: Limits) -> int:
    """The agent session's ``keep_recent_count``: ``.meta.json``'s (else the newest archive's,
    else the default), counted in workmem messages."""
    keep = session.keep_recent_count
    if keep is None:
        keep = next(
            (
                archive.keep_recent_count
                for archive in reversed(session.archives)
                if archive.keep_recent_count is not None
            ),
            None,
        )
    if keep is None:
        return limits.default_keep_recent_count
    return min(MAX_KEEP, keep_window(keep, session.messages))


class OpenVikingWriter:
    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID, limits: Limits) -> None:
        principal = maintenance_principal(tenant_id)
        self.db = db
        self.scope = principal.scope
        self.limits = limits
        self.agent_sessions = AgentSessionService(db, principal, limits)
        self.archives = ArchiveService(db, principal)

    async def existing(self, session: OvSession) -> Existing | None:
        row = await self.agent_sessions.find_by_external_id(session.ref.session_id)
        if row is None:
            return None
        source = row.metadata_.get(SOURCE)
        ref = session.ref
        if not isinstance(source, dict) or (source.get("account"), source.get("user")) != (
            ref.account,
            ref.user,
        ):
            return Existing(row.agent_session_id, None)
        fingerprint = source.get("fingerprint")
        return Existing(row.agent_session_id, fingerprint if isinstance(fingerprint, str) else None)

    async def _append(
        self, agent_session_id: uuid.UUID, messages: Sequence[MessageCreate]
    ) -> list[StoredMessage]:
        stored: list[StoredMessage] = []
        step = self.limits.max_batch_messages
        for start in range(0, len(messages), step):
            # The API's append flow, inside this import's transaction (no rate: an operator's
            # import is not a client's traffic; the quotas hold as for any append).
            outcome = await append_within(
                self.db, self.scope, agent_session_id, messages[start : start + step], self.limits
            )
            stored += outcome.messages
        return stored

    async def store(self, session: OvSession) -> Stored:
        keep = session_keep(session, self.limits)
        row = await self.agent_sessions.create(
            AgentSessionCreate(
                external_id=session.ref.session_id,
                user_id=session.ref.user,
                metadata=agent_session_metadata(session),
                keep_recent_count=keep,
            ),
            created_at=session.created_at,
        )
        agent_session_id = row.agent_session_id
        archived = await self._append(
            agent_session_id, [m for archive in session.archives for m in _openai(archive.messages)]
        )
        if archived:
            # One update for all archives: what their commits would have left on the row.
            await self.agent_sessions.record_imported_archives(
                agent_session_id,
                keep=keep,
                archived_upto_seq=archived[-1].seq,
                archive_count=len(session.archives),
                archived_tokens=sum(message.token_count for message in archived),
            )
        live = await self._append(agent_session_id, _openai(session.live))
        by_seq = {message.seq: message for message in (*archived, *live)}
        ordered = session.messages
        position, end_seq = 0, 0
        for archive_seq, archive in enumerate(session.archives, start=1):
            start_seq, end_seq = end_seq + 1, end_seq + stored_count(archive.messages)
            position += len(archive.messages)
            tail = ordered[position : position + archive.retained]
            kept = archive.keep_recent_count
            await self.archives.store_imported(
                agent_session_id,
                archive_seq,
                _imported(
                    archive,
                    start_seq,
                    end_seq,
                    tail_messages=stored_count(tail),
                    keep=None
                    if kept is None
                    else min(MAX_KEEP, keep_window(kept, ordered[: position + len(tail)])),
                ),
                by_seq,
            )
        current = await self.agent_sessions.get(agent_session_id)
        recomputed = await self.agent_sessions.recompute_pending(current)
        return Stored(
            agent_session_id,
            current.pending_tokens,
            _pending_problems(session, current.pending_tokens, recomputed),
        )


def _openai(messages: Sequence[OvMessage]) -> list[MessageCreate]:
    return [message for line in messages for message in line.messages]


def _imported(
    archive: OvArchive, start_seq: int, end_seq: int, *, tail_messages: int, keep: int | None
) -> ImportedArchive:
    overview = archive.overview
    document = overview.document if overview.kind is OverviewKind.V2 else None
    legacy = overview.text if overview.kind is OverviewKind.LEGACY else None
    abstract = None
    if document is not None:
        abstract = abstract_of(document.sections)
    elif legacy is not None:
        abstract = legacy_abstract(legacy)
    return ImportedArchive(
        start_seq=start_seq,
        end_seq=end_seq,
        tail_end_seq=end_seq + tail_messages if tail_messages else None,
        status=archive.status,
        keep_recent_count=keep,
        created_at=archive.created_at,
        finished_at=archive.finished_at,
        error_stage=archive.error_stage,
        last_error=archive.last_error,
        document=document,
        legacy_overview=legacy,
        abstract=abstract,
        note=f"imported from OpenViking history/{archive.name}",
    )


def _pending_problems(session: OvSession, stored: int, recomputed: int) -> tuple[Problem, ...]:
    """``pending_tokens`` is recomputed in workmem's token counts; OpenViking's estimate can
    only be compared on whether anything is pending at all."""
    problems = []
    path = f"{session.ref.path}/.meta.json"
    if stored != recomputed:
        problems.append(
            Problem(
                session.ref.path,
                None,
                ProblemKind.PENDING_TOKENS_MISMATCH,
                f"pending_tokens {stored} differs from its recomputation {recomputed}",
            )
        )
    said = session.pending_tokens
    if said is not None and (said > 0) != (recomputed > 0):
        problems.append(
            Problem(
                path,
                None,
                ProblemKind.PENDING_TOKENS_MISMATCH,
                f"pending_tokens is {said}, but {recomputed} tokens of live messages lie "
                "outside the keep window",
            )
        )
    return tuple(problems)
