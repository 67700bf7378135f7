"""What the audit pages show: agent sessions, a timeline of archives, one archive's sections with
their diffs and decisions, its raw messages, when a text entered and left each section, and what
the model saw in each recorded context.

Built over the agent-session and archive services (never their repositories) and the audit views.
Flushes nothing and never commits; endpoints own the transaction and render the values.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.service import ArchiveService, ExpandedArchive
from app.archives.working_memory import RecordedDecision, WorkingMemory
from app.audit.diff import Segment, word_diff
from app.audit.repository import AuditRepository, Intervention, TextSpan
from app.audit.seen import Seen, seen
from app.ledger.service import LedgerService
from app.models import AgentSession, Archive, ArchiveStatus, ContextRecord
from app.sessions.records import NewestArchive, StoredMessage
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal
from app.wm.provenance import SectionSources
from app.wm.sections import SECTIONS, Section

TIMELINE_PAGE = 50
"""Archives per timeline page: a long agent session is paged, never rendered whole."""
SOURCE_MESSAGES = 300
"""Source messages an archive page shows inline (the newest cited); older ones are linked."""


@dataclass(frozen=True, slots=True)
class Timeline:
    agent_session: AgentSession
    archives: Sequence[Archive]
    interventions: Mapping[int, Sequence[Intervention]]
    older_before: int | None
    """Pass as ``before`` to read the next older page; ``None`` on the oldest page."""
    newer_before: int | None
    """Pass as ``before`` to read the next newer page (``has_newer`` without it: the newest)."""
    has_newer: bool


@dataclass(frozen=True, slots=True)
class SectionChange:
    """One section after an archive, with its diff against the previous working memory."""

    section: Section
    content: str
    segments: tuple[Segment, ...]
    changed: bool
    decision: RecordedDecision | None
    sources: SectionSources = ()
    """Each item of ``content`` with the seqs of the messages it came from."""


@dataclass(frozen=True, slots=True)
class ArchiveDetail:
    agent_session: AgentSession
    archive: Archive
    compared_with: int
    """The archive whose working memory the diff is against (0: the empty document)."""
    sections: tuple[SectionChange, ...] = ()
    legacy_text: str | None = None
    sources: Mapping[int, StoredMessage] = field(default_factory=dict)
    """The raw messages the items cite, by seq (at most ``SOURCE_MESSAGES``)."""


@dataclass(frozen=True, slots=True)
class RawMessages:
    """A page of an archive's raw messages, and the agent session they belong to."""

    agent_session: AgentSession
    expanded: ExpandedArchive


@dataclass(frozen=True, slots=True)
class Search:
    agent_session: AgentSession
    needle: str
    spans: Sequence[TextSpan]


def compare(current: WorkingMemory, previous: WorkingMemory) -> tuple[SectionChange, ...]:
    """Each section of ``current`` with its word diff against ``previous`` and its decision."""
    decisions = {decision.section: decision for decision in current.decisions}
    changes = []
    for section in SECTIONS:
        old, new = previous.sections.get(section, ""), current.sections.get(section, "")
        changes.append(
            SectionChange(
                section=section,
                content=new,
                segments=word_diff(old, new),
                changed=old != new,
                decision=decisions.get(section),
                sources=current.sources.get(section, ()),
            )
        )
    return tuple(changes)


class AuditService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.agent_sessions = AgentSessionService(db, principal)
        self.archives = ArchiveService(db, principal)
        self.audit = AuditRepository(db, principal.scope)
        self.ledger = LedgerService(db, principal)

    async def agent_sessions_page(
        self, *, cursor: str | None, limit: int
    ) -> tuple[list[tuple[AgentSession, NewestArchive | None]], str | None]:
        return await self.agent_sessions.page(cursor=cursor, limit=limit)

    async def contexts(
        self, agent_session_id: uuid.UUID, *, cursor: str | None, limit: int = TIMELINE_PAGE
    ) -> tuple[AgentSession, list[ContextRecord], str | None]:
        """The agent session's recorded contexts, newest first."""
        agent_session = await self.agent_sessions.get(agent_session_id)
        rows, next_cursor = await self.ledger.page(agent_session_id, cursor=cursor, limit=limit)
        return agent_session, rows, next_cursor

    async def seen(self, agent_session_id: uuid.UUID, context_id: uuid.UUID) -> Seen:
        """What the model saw in one recorded context, rebuilt from the rows it names."""
        agent_session = await self.agent_sessions.get(agent_session_id)
        row = await self.ledger.get(agent_session_id, context_id)
        return seen(agent_session, row, await self.ledger.render(row))

    async def timeline(
        self, agent_session_id: uuid.UUID, *, before: int | None, limit: int = TIMELINE_PAGE
    ) -> Timeline:
        agent_session = await self.agent_sessions.get(agent_session_id)
        rows, older = await self.archives.page(agent_session_id, before_seq=before, limit=limit)
        by_archive: dict[int, list[Intervention]] = {}
        if rows:
            for event in await self.audit.interventions(
                agent_session_id,
                from_archive=rows[-1].archive_seq,
                to_archive=rows[0].archive_seq,
            ):
                by_archive.setdefault(event.archive_seq, []).append(event)
        newest = rows[0].archive_seq if rows else 0
        has_newer = newest < agent_session.archive_count and before is not None
        newer = newest + limit + 1
        return Timeline(
            agent_session=agent_session,
            archives=rows,
            interventions=by_archive,
            older_before=older,
            newer_before=newer if newer <= agent_session.archive_count else None,
            has_newer=has_newer,
        )

    async def archive(self, agent_session_id: uuid.UUID, archive_seq: int) -> ArchiveDetail:
        agent_session = await self.agent_sessions.get(agent_session_id)
        archive = await self.archives.get(agent_session_id, archive_seq)
        if archive.status != ArchiveStatus.DONE:
            return ArchiveDetail(agent_session, archive, compared_with=0)
        current = await self.archives.working_memory(
            agent_session_id, archive_seq=archive_seq, with_decisions=True, visible=True
        )
        if current is None:
            return ArchiveDetail(agent_session, archive, compared_with=0)
        previous = (
            await self.archives.working_memory(
                agent_session_id, before_seq=archive_seq, visible=True
            )
            or WorkingMemory.empty()
        )
        sections = () if current.is_legacy else compare(current, previous)
        cited = sorted({seq for change in sections for s in change.sources for seq in s.seqs})
        shown = await self.agent_sessions.messages_at(agent_session_id, cited[-SOURCE_MESSAGES:])
        return ArchiveDetail(
            agent_session=agent_session,
            archive=archive,
            compared_with=previous.archive_seq,
            sections=sections,
            legacy_text=current.legacy_text,
            sources={message.seq: message for message in shown},
        )

    async def messages(
        self, agent_session_id: uuid.UUID, archive_seq: int, *, after_seq: int, limit: int
    ) -> RawMessages:
        agent_session = await self.agent_sessions.get(agent_session_id)
        expanded = await self.archives.expand(
            agent_session_id, archive_seq, after_seq=after_seq, limit=limit
        )
        return RawMessages(agent_session, expanded)

    async def search(self, agent_session_id: uuid.UUID, needle: str) -> Search:
        agent_session = await self.agent_sessions.get(agent_session_id)
        spans = await self.audit.text_presence(agent_session_id, needle) if needle else []
        return Search(agent_session, needle, spans)
