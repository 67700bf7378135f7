"""Commit phase 1 and the reads of archives and working memory. Flushes, never commits.

Phase 1 is O(tail) and independent of history length: it locks the agent-session row, finds a
split point that does not cut a tool group, inserts the archive row (a seq range, no message is
copied or moved) and updates the counters. Phase 2 is ``jobs`` (what a worker reads and writes)
and ``worker`` (the loop). Returns ORM rows and domain values; endpoints shape the answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.action_repository import ActionRepository
from app.archives.actions import ArchiveActions
from app.archives.imported import IMPORT_GENERATOR, ImportedArchive, imported_section_rows
from app.archives.records import SectionVersionRow, SplitRow
from app.archives.repository import ArchiveRepository
from app.archives.retention import TurnRetention, kept_tail_start
from app.archives.working_memory import RecordedDecision, WorkingMemory
from app.errors import Conflict, NotFound
from app.memories.records import ProducedMemory
from app.memories.service import MemoryService
from app.models import AgentSession, Archive, ArchiveAction, WmSectionVersion
from app.sessions.records import StoredMessage
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal
from app.wm.sections import Section, render
from app.wm.tokens import count_tokens

SkipReason = Literal["no_messages", "all_within_keep_window"]


@dataclass(frozen=True, slots=True)
class CommitOutcome:
    agent_session: AgentSession
    archive: Archive | None
    skipped: SkipReason | None
    pending_tokens: int
    live_message_count: int


def is_valid_split(end_seq: int, rows: dict[int, SplitRow], last_seq: int) -> bool:
    """An archive may end at ``end_seq`` when the tail does not start inside a tool group."""
    following = rows.get(end_seq + 1) if end_seq < last_seq else None
    if following is not None and following.role == "tool":
        return False
    current = rows[end_seq]
    return not (current.role == "assistant" and current.has_tool_calls)


async def split_point(
    archives: ArchiveRepository,
    agent_session_id: uuid.UUID,
    last_seq: int,
    archived: int,
    end_seq: int,
) -> tuple[int, dict[int, SplitRow]]:
    """Where an archive asked to end at ``end_seq`` ends: moved earlier until the tail starts at
    a tool-group boundary (at most ``archived``: nothing to archive), with the rows read.

    Reads the tail and the few messages before it, newest first, in growing chunks: the cost
    depends on the tail and on the size of the group at the split, never on history.
    """
    rows: dict[int, SplitRow] = {}
    chunk = last_seq - end_seq + 64
    lowest = last_seq + 1
    while True:
        if end_seq <= archived:
            return end_seq, rows
        if end_seq < lowest and lowest > archived + 1:
            fetched = await archives.split_rows(
                agent_session_id, after_seq=archived, upto_seq=lowest - 1, limit=chunk
            )
            rows.update((row.seq, row) for row in fetched)
            lowest = min(rows) if rows else archived + 1
            chunk *= 2
        if is_valid_split(end_seq, rows, last_seq):
            return end_seq, rows
        end_seq -= 1


@dataclass(frozen=True, slots=True)
class ExpandedArchive:
    """An archive with a page of its raw messages, the decisions recorded with it, and the
    long-term memory changes it made."""

    archive: Archive
    messages: list[StoredMessage]
    decisions: list[RecordedDecision]
    memories: list[ProducedMemory]
    actions: list[ArchiveAction] = field(default_factory=list)

    @property
    def next_after_seq(self) -> int | None:
        last = self.messages[-1].seq if self.messages else None
        return last if last is not None and last < self.archive.end_seq else None


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """Section versions in ``(archive_seq, position)`` order; ``next_after`` continues it."""

    items: Sequence[WmSectionVersion]
    next_after: tuple[int, int] | None


class ArchiveService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.agent_sessions = AgentSessionService(db, principal)
        self.archives = ArchiveRepository(db, principal.scope)
        self.memories = MemoryService(db, principal)

    async def commit(
        self, agent_session_id: uuid.UUID, keep: int | TurnRetention | None
    ) -> CommitOutcome:
        # The row lock serialises commits (and appends) of one agent session.
        agent_session = await self.agent_sessions.get(agent_session_id, lock=True)
        if isinstance(keep, TurnRetention):
            return await self._commit_turns(agent_session, keep)
        keep = agent_session.keep_recent_count if keep is None else keep
        last_seq = agent_session.last_seq
        archived = agent_session.archived_upto_seq
        live = last_seq - archived
        if live == 0 or live <= keep:
            await self.agent_sessions.record_skipped_commit(agent_session, keep)
            reason: SkipReason = "no_messages" if live == 0 else "all_within_keep_window"
            return CommitOutcome(agent_session, None, reason, 0, live)

        end_seq, rows = await split_point(
            self.archives, agent_session_id, last_seq, archived, last_seq - keep
        )
        tail = [row for seq, row in rows.items() if seq > end_seq]
        # When a tool group made the tail longer than asked, its head is already outside the
        # keep window: it is pending at once, which keeps the O(1) counter exact (DESIGN 5).
        pending = sum(row.token_count for row in tail if row.seq <= last_seq - keep)
        if end_seq <= archived:
            # The group reaches back to the start of the live messages: nothing can be archived,
            # yet its head is outside the window and counts as pending like any other.
            await self.agent_sessions.record_skipped_commit(
                agent_session, keep, pending_tokens=pending
            )
            return CommitOutcome(agent_session, None, "all_within_keep_window", pending, live)

        tail_tokens = sum(row.token_count for row in tail)
        live_tokens = agent_session.total_tokens - agent_session.archived_tokens
        archived_tokens = live_tokens - tail_tokens
        # The first turn is read by the archive's insert itself: one round trip less.
        first_turn = self.archives.turn_at(agent_session_id, archived + 1)
        archive = await self.archives.insert_pending(
            {
                "agent_session_id": agent_session_id,
                "archive_seq": agent_session.archive_count + 1,
                "start_seq": archived + 1,
                "end_seq": end_seq,
                "keep_recent_count": keep,
                "first_turn": first_turn,
                "last_turn": rows[end_seq].turn,
                "tail_start_seq": end_seq + 1 if tail else None,
                "tail_end_seq": last_seq if tail else None,
                "tail_message_count": len(tail),
                "tail_tokens": tail_tokens,
                "archived_tokens": archived_tokens,
            },
            self.agent_sessions.commit_counters(
                agent_session,
                keep=keep,
                end_seq=end_seq,
                archived_tokens=archived_tokens,
                pending_tokens=pending,
            ),
        )
        return CommitOutcome(agent_session, archive, None, pending, last_seq - end_seq)

    async def _commit_turns(
        self, agent_session: AgentSession, rule: TurnRetention
    ) -> CommitOutcome:
        """Phase 1 under turn-aware retention: the kept tail is chosen over the live messages
        (``retention.kept_tail_start``); the session's remembered ``keep_recent_count`` is left as
        it is (or becomes the ``keep_recent_count`` sent with the rule), and the pending counter
        is what lies outside that window."""
        agent_session_id = agent_session.agent_session_id
        keep = agent_session.keep_recent_count if rule.remember_keep is None else rule.remember_keep
        last_seq = agent_session.last_seq
        archived = agent_session.archived_upto_seq
        live = last_seq - archived
        rows = (
            await self.archives.split_rows(
                agent_session_id, after_seq=archived, upto_seq=last_seq, limit=live
            )
            if live
            else []
        )
        rows.reverse()
        start = kept_tail_start(rows, rule)
        tail = rows[start:]
        pending = sum(row.token_count for row in tail if row.seq <= last_seq - keep)
        if start == 0:
            await self.agent_sessions.record_skipped_commit(
                agent_session, keep, pending_tokens=pending
            )
            reason: SkipReason = "no_messages" if live == 0 else "all_within_keep_window"
            return CommitOutcome(agent_session, None, reason, pending, live)
        end_seq = rows[start - 1].seq
        tail_tokens = sum(row.token_count for row in tail)
        archived_tokens = sum(row.token_count for row in rows[:start])
        archive = await self.archives.insert_pending(
            {
                "agent_session_id": agent_session_id,
                "archive_seq": agent_session.archive_count + 1,
                "start_seq": archived + 1,
                "end_seq": end_seq,
                "keep_recent_count": len(tail),
                "first_turn": rows[0].turn,
                "last_turn": rows[start - 1].turn,
                "tail_start_seq": end_seq + 1 if tail else None,
                "tail_end_seq": last_seq if tail else None,
                "tail_message_count": len(tail),
                "tail_tokens": tail_tokens,
                "archived_tokens": archived_tokens,
            },
            self.agent_sessions.commit_counters(
                agent_session,
                keep=keep,
                end_seq=end_seq,
                archived_tokens=archived_tokens,
                pending_tokens=pending,
            ),
        )
        return CommitOutcome(agent_session, archive, None, pending, len(tail))

    async def store_imported(
        self,
        agent_session_id: uuid.UUID,
        archive_seq: int,
        imported: ImportedArchive,
        messages: Mapping[int, StoredMessage],
    ) -> Archive:
        """Insert an imported archive (and its section rows) over messages already appended.

        ``messages`` holds at least the archive's range and its tail, by seq: turns and token
        totals are taken from them, as a commit takes them from the rows. The agent session's
        counters are the caller's (``AgentSessionService.record_imported_archives``).
        """
        span = [messages[seq] for seq in range(imported.start_seq, imported.end_seq + 1)]
        tail_end = imported.tail_end_seq or imported.end_seq
        tail = [messages[seq] for seq in range(imported.end_seq + 1, tail_end + 1)]
        values: dict[str, Any] = {
            "agent_session_id": agent_session_id,
            "archive_seq": archive_seq,
            "start_seq": imported.start_seq,
            "end_seq": imported.end_seq,
            "status": imported.status,
            "keep_recent_count": imported.keep_recent_count,
            "first_turn": span[0].turn,
            "last_turn": span[-1].turn,
            "tail_start_seq": tail[0].seq if tail else None,
            "tail_end_seq": tail[-1].seq if tail else None,
            "tail_message_count": len(tail),
            "tail_tokens": sum(message.token_count for message in tail),
            "archived_tokens": sum(message.token_count for message in span),
            "finished_at": imported.finished_at,
            "error_stage": imported.error_stage,
            "last_error": imported.last_error,
            "abstract": imported.abstract,
            "generator_note": imported.note,
        }
        if imported.created_at is not None:
            values["created_at"] = imported.created_at
        rows: list[SectionVersionRow] = []
        if imported.document is not None:
            rows = imported_section_rows(
                agent_session_id,
                archive_seq,
                imported.document,
                imported.finished_at or imported.created_at,
            )
            values.update(
                generator=IMPORT_GENERATOR,
                overview=render(imported.document.sections),
                wm_tokens=sum(row.token_count for row in rows),
            )
        elif imported.legacy_overview is not None:
            values.update(
                generator=IMPORT_GENERATOR,
                overview=imported.legacy_overview,
                legacy_overview=imported.legacy_overview,
                is_legacy=True,
                wm_tokens=count_tokens(imported.legacy_overview),
            )
        archive = await self.archives.insert(values)
        if rows:
            await self.archives.insert_sections(rows)
        return archive

    async def _require_agent_session(self, agent_session_id: uuid.UUID) -> None:
        """404 for an agent session the credential cannot see; read only when a query that
        would have proved it visible came back empty, so the common path costs nothing."""
        await self.agent_sessions.get(agent_session_id)

    async def get(self, agent_session_id: uuid.UUID, archive_seq: int) -> Archive:
        row = await self.archives.get(agent_session_id, archive_seq)
        if row is None:
            await self._require_agent_session(agent_session_id)
            raise NotFound(f"archive {archive_seq} of agent session {agent_session_id} not found")
        return row

    async def expand(
        self,
        agent_session_id: uuid.UUID,
        archive_seq: int,
        *,
        after_seq: int,
        limit: int,
        with_actions: bool = False,
    ) -> ExpandedArchive:
        """The archive with a page of its messages; ``with_actions``: and its retries and
        clears (one more statement)."""
        archive = await self.get(agent_session_id, archive_seq)
        messages = await self.agent_sessions.messages_between(
            agent_session_id,
            after_seq=max(archive.start_seq - 1, after_seq),
            upto_seq=archive.end_seq,
            limit=limit,
        )
        decisions = await self.archives.decisions(agent_session_id, archive_seq)
        memories = await self.memories.produced_by(agent_session_id, archive_seq)
        actions = await self.actions(archive.agent_session_id, archive_seq) if with_actions else []
        return ExpandedArchive(archive, messages, decisions, memories, actions)

    async def memories_produced(
        self, agent_session_id: uuid.UUID, archive_seq: int
    ) -> list[ProducedMemory]:
        """The long-term memory changes of an archive the caller has already seen."""
        return await self.memories.produced_by(agent_session_id, archive_seq)

    async def page(
        self, agent_session_id: uuid.UUID, *, before_seq: int | None, limit: int
    ) -> tuple[Sequence[Archive], int | None]:
        rows = await self.archives.page(agent_session_id, before_seq=before_seq, limit=limit)
        if not rows:
            await self._require_agent_session(agent_session_id)
        next_before = (
            rows[-1].archive_seq if len(rows) == limit and rows[-1].archive_seq > 1 else None
        )
        return rows, next_before

    async def index(self, agent_session_id: uuid.UUID, *, limit: int) -> Sequence[Archive]:
        """The newest archives for a context's index (only the columns it shows are loaded);
        the caller has already seen the agent session."""
        return await self.archives.index(agent_session_id, limit=limit)

    async def working_memory(
        self,
        agent_session_id: uuid.UUID,
        *,
        archive_seq: int | None = None,
        before_seq: int | None = None,
        with_decisions: bool = False,
        visible: bool = False,
    ) -> WorkingMemory | None:
        """The WM of the newest done archive (before ``before_seq``), or of done archive
        ``archive_seq``; ``None`` when there is none. ``visible``: the caller has already seen
        the agent session (else a missing WM is checked for a missing agent session, which is
        404)."""
        found = await self.archives.working_memory(
            agent_session_id,
            archive_seq=archive_seq,
            before_seq=before_seq,
            with_decisions=with_decisions,
        )
        if found is None and not visible:
            await self._require_agent_session(agent_session_id)
        return found

    async def history(
        self,
        agent_session_id: uuid.UUID,
        *,
        section: Section | None,
        after: tuple[int, int],
        limit: int,
        from_archive: int | None = None,
        to_archive: int | None = None,
    ) -> HistoryPage:
        """Section versions after ``after``, within archives ``from_archive..to_archive``."""
        rows = await self.archives.history(
            agent_session_id,
            section=section,
            after=after,
            limit=limit,
            from_archive=from_archive,
            to_archive=to_archive,
        )
        if not rows:
            await self._require_agent_session(agent_session_id)
        last = rows[-1] if len(rows) == limit else None
        return HistoryPage(rows, None if last is None else (last.archive_seq, last.position))

    async def _own(self, agent_session_id: uuid.UUID, archive_seq: int) -> Archive:
        """Archive ``archive_seq`` to change: 409 for one a fork shares with an ancestor."""
        archive = await self.get(agent_session_id, archive_seq)
        if archive.agent_session_id != agent_session_id:
            raise Conflict(
                f"archive {archive_seq} is shared with agent session {archive.agent_session_id}, "
                "this fork's ancestor; change it there"
            )
        return archive

    async def _here(self, agent_session_id: uuid.UUID, archive_seq: int) -> None:
        """404 for an unknown archive, 409 for one a fork shares with an ancestor."""
        if await self.archives.get(agent_session_id, archive_seq, lock=True) is None:
            await self._own(agent_session_id, archive_seq)

    async def retry(
        self, agent_session_id: uuid.UUID, archive_seq: int, reason: str | None = None
    ) -> Archive:
        """Queue a failed archive again, recording who asked and why."""
        await self._here(agent_session_id, archive_seq)
        return await self._actions().retry(agent_session_id, archive_seq, reason)

    async def clear(
        self, agent_session_id: uuid.UUID, archive_seq: int, reason: str | None = None
    ) -> Archive:
        """Set a failed archive aside for good, recording who asked and why; the next archive
        covers its messages."""
        await self._here(agent_session_id, archive_seq)
        return await self._actions().clear(agent_session_id, archive_seq, reason)

    async def actions(self, agent_session_id: uuid.UUID, archive_seq: int) -> list[ArchiveAction]:
        """The retries and clears of an archive the caller has already seen, oldest first."""
        return list(
            await ActionRepository(self.db, self.principal.scope).of_archive(
                agent_session_id, archive_seq
            )
        )

    def _actions(self) -> ArchiveActions:
        return ArchiveActions(self.db, self.principal.scope, self.principal.api_key_id)
