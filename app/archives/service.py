"""Commit phase 1 and the reads of archives and working memory. Flushes, never commits.

Phase 1 is O(tail) and independent of history length: it locks the agent-session row, finds a
split point that does not cut a tool group, inserts the archive row (a seq range, no message is
copied or moved) and updates the counters. Phase 2 lives in ``worker``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.generation import Generated, Prior
from app.archives.repository import ArchiveRepository, Claim, SplitRow
from app.archives.schemas import (
    ArchiveRead,
    DecisionRead,
    SectionVersionRead,
    WorkingMemoryRead,
)
from app.errors import Conflict, NotFound
from app.models import AgentSession, Archive, WmSectionVersion
from app.sessions.service import AgentSessionService
from app.tenancy.principal import Principal
from app.wm.sections import SECTIONS, Section, empty_sections

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


def archive_read(row: Archive) -> ArchiveRead:
    return ArchiveRead.model_validate(row, from_attributes=True)


def decision_read(row: WmSectionVersion) -> DecisionRead:
    return DecisionRead(
        section=row.section,
        requested=row.op_requested,
        applied=row.op_applied,
        guard=row.guard,
        reason=row.reason,
        details=row.details,
    )


class ArchiveService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.agent_sessions = AgentSessionService(db, principal)
        self.archives = ArchiveRepository(db, principal.tenant_id)

    async def commit(self, agent_session_id: uuid.UUID, keep: int | None) -> CommitOutcome:
        # The row lock serialises commits (and appends) of one agent session.
        agent_session = await self.agent_sessions.get(agent_session_id, lock=True)
        keep = agent_session.keep_recent_count if keep is None else keep
        last_seq = agent_session.last_seq
        archived = agent_session.archived_upto_seq
        live = last_seq - archived
        if live == 0 or live <= keep:
            await self.agent_sessions.record_skipped_commit(agent_session, keep)
            reason: SkipReason = "no_messages" if live == 0 else "all_within_keep_window"
            return CommitOutcome(agent_session, None, reason, 0, live)

        end_seq, rows = await self._split(agent_session_id, last_seq, archived, last_seq - keep)
        if end_seq <= archived:
            await self.agent_sessions.record_skipped_commit(agent_session, keep)
            return CommitOutcome(agent_session, None, "all_within_keep_window", 0, live)

        tail = [row for seq, row in rows.items() if seq > end_seq]
        tail_tokens = sum(row.token_count for row in tail)
        live_tokens = agent_session.total_tokens - agent_session.archived_tokens
        archived_tokens = live_tokens - tail_tokens
        # When a tool group made the tail longer than asked, its head is already outside the
        # keep window: it is pending at once, which keeps the O(1) counter exact (DESIGN 5).
        pending = sum(row.token_count for row in tail if row.seq <= last_seq - keep)
        first_turn = await self.archives.turn_of(agent_session_id, archived + 1)
        archive = await self.archives.insert(
            {
                "agent_session_id": agent_session_id,
                "archive_seq": agent_session.archive_count + 1,
                "start_seq": archived + 1,
                "end_seq": end_seq,
                "status": "pending",
                "keep_recent_count": keep,
                "first_turn": first_turn,
                "last_turn": rows[end_seq].turn,
                "tail_start_seq": end_seq + 1 if tail else None,
                "tail_end_seq": last_seq if tail else None,
                "tail_message_count": len(tail),
                "tail_tokens": tail_tokens,
                "archived_tokens": archived_tokens,
            }
        )
        await self.agent_sessions.record_commit(
            agent_session,
            keep=keep,
            end_seq=end_seq,
            archived_tokens=archived_tokens,
            pending_tokens=pending,
        )
        return CommitOutcome(agent_session, archive, None, pending, last_seq - end_seq)

    async def _split(
        self, agent_session_id: uuid.UUID, last_seq: int, archived: int, end_seq: int
    ) -> tuple[int, dict[int, SplitRow]]:
        """Move ``end_seq`` earlier until the tail starts at a tool-group boundary.

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
                fetched = await self.archives.split_rows(
                    agent_session_id, after_seq=archived, upto_seq=lowest - 1, limit=chunk
                )
                rows.update((row.seq, row) for row in fetched)
                lowest = min(rows) if rows else archived + 1
                chunk *= 2
            if is_valid_split(end_seq, rows, last_seq):
                return end_seq, rows
            end_seq -= 1

    async def get(self, agent_session_id: uuid.UUID, archive_seq: int) -> Archive:
        await self.agent_sessions.get(agent_session_id)
        row = await self.archives.get(agent_session_id, archive_seq)
        if row is None:
            raise NotFound(f"archive {archive_seq} of agent session {agent_session_id} not found")
        return row

    async def page(
        self, agent_session_id: uuid.UUID, *, before_seq: int | None, limit: int
    ) -> tuple[Sequence[Archive], int | None]:
        await self.agent_sessions.get(agent_session_id)
        rows = await self.archives.page(agent_session_id, before_seq=before_seq, limit=limit)
        next_before = (
            rows[-1].archive_seq if len(rows) == limit and rows[-1].archive_seq > 1 else None
        )
        return rows, next_before

    async def decisions(self, archive: Archive) -> list[DecisionRead]:
        rows = await self.archives.sections(archive.agent_session_id, archive.archive_seq)
        return [decision_read(row) for row in rows]

    async def working_memory(
        self, agent_session_id: uuid.UUID, *, before_seq: int | None = None
    ) -> WorkingMemoryRead | None:
        """The WM of the newest done archive (reads its seven rows by primary key)."""
        await self.agent_sessions.get(agent_session_id)
        archive = await self.archives.newest_done(agent_session_id, before_seq=before_seq)
        if archive is None:
            return None
        return await self.working_memory_of(archive)

    async def working_memory_of(self, archive: Archive) -> WorkingMemoryRead:
        rows = await self.archives.sections(archive.agent_session_id, archive.archive_seq)
        if not rows:
            return WorkingMemoryRead(
                archive_seq=archive.archive_seq,
                covered_start_seq=1,
                covered_end_seq=archive.end_seq,
                markdown=archive.legacy_overview or archive.overview or "",
                sections={},
                decisions=[],
                generator=archive.generator,
                tokens=archive.wm_tokens or 0,
                is_legacy=True,
            )
        return WorkingMemoryRead(
            archive_seq=archive.archive_seq,
            covered_start_seq=1,
            covered_end_seq=archive.end_seq,
            markdown=archive.overview or "",
            sections={row.section: row.content for row in rows},
            decisions=[decision_read(row) for row in rows],
            generator=archive.generator,
            tokens=sum(row.token_count for row in rows),
        )

    async def history(
        self,
        agent_session_id: uuid.UUID,
        *,
        section: str | None,
        after_archive_seq: int,
        limit: int,
    ) -> tuple[list[SectionVersionRead], int | None]:
        await self.agent_sessions.get(agent_session_id)
        rows = await self.archives.history(
            agent_session_id, section=section, after_archive_seq=after_archive_seq, limit=limit
        )
        items = [SectionVersionRead.model_validate(row, from_attributes=True) for row in rows]
        next_after = items[-1].archive_seq if len(items) == limit else None
        return items, next_after

    async def retry(self, agent_session_id: uuid.UUID, archive_seq: int) -> Archive:
        archive = await self.get(agent_session_id, archive_seq)
        if archive.status != "failed":
            raise Conflict(f"archive {archive_seq} is {archive.status}; only failed ones retry")
        await self.archives.reschedule(
            agent_session_id,
            archive_seq,
            delay_s=0,
            attempt=0,
            last_error=None,
            error_stage=None,
            finished_at=None,
        )
        return await self.get(agent_session_id, archive_seq)


class LeaseLost(Exception):
    """The archive is no longer ours (its lease expired and another worker claimed it)."""


@dataclass(frozen=True, slots=True)
class Work:
    archive: Archive
    prior: Prior
    messages: list[dict[str, object]]
    covers_failed_archives: list[int]


def abstract_of(sections: Mapping[Section, str], limit: int = 200) -> str:
    """One line for archive listings: the title, then the start of Current State."""
    title = sections.get(Section.SESSION_TITLE, "").strip().splitlines()
    state = " ".join(sections.get(Section.CURRENT_STATE, "").split())
    line = " — ".join(part for part in (title[0] if title else "", state) if part)
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _json_safe(value: object) -> Any:
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


class ArchiveJobService:
    """What a worker does inside its short transactions, under the claimed archive's tenant."""

    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.db = db
        self.archives = ArchiveRepository(db, tenant_id)

    async def _owned(self, claim: Claim, *, lock: bool) -> Archive:
        archive = await self.archives.get(claim.agent_session_id, claim.archive_seq, lock=lock)
        if archive is None or archive.status != "running" or archive.attempt != claim.attempt:
            raise LeaseLost(f"archive {claim.archive_seq} is not held by this attempt")
        return archive

    async def status(self, agent_session_id: uuid.UUID, archive_seq: int) -> str:
        archive = await self.archives.get(agent_session_id, archive_seq)
        if archive is None:
            raise NotFound(f"archive {archive_seq} not found")
        return archive.status

    async def load(self, claim: Claim, *, max_input_tokens: int) -> Work:
        archive = await self._owned(claim, lock=False)
        agent_session_id = claim.agent_session_id
        prior_archive = await self.archives.newest_done(
            agent_session_id, before_seq=claim.archive_seq
        )
        prior = Prior(sections=empty_sections())
        if prior_archive is not None:
            rows = await self.archives.sections(agent_session_id, prior_archive.archive_seq)
            if rows:
                prior = Prior(sections={Section(row.section): row.content for row in rows})
            else:
                legacy = prior_archive.legacy_overview or prior_archive.overview or ""
                prior = Prior(sections=empty_sections(), legacy_text=legacy)
        failed = await self.archives.failed_between(
            agent_session_id,
            after_seq=0 if prior_archive is None else prior_archive.archive_seq,
            before_seq=claim.archive_seq,
        )
        failed_rows = await self.archives.messages(
            agent_session_id, [(row.start_seq, row.end_seq) for row in failed]
        )
        # A failed archive's messages ride along with the next update, newest first within the
        # input budget, so a failure never leaves a hole in the working memory (DESIGN 6.2).
        budget = max_input_tokens
        kept: list[dict[str, object]] = []
        for row in reversed(failed_rows):
            if row.token_count > budget:
                break
            budget -= row.token_count
            kept.append(row.message)
        kept.reverse()
        own = await self.archives.messages(agent_session_id, [(archive.start_seq, archive.end_seq)])
        return Work(
            archive=archive,
            prior=prior,
            messages=kept + [row.message for row in own],
            covers_failed_archives=[row.archive_seq for row in failed],
        )

    async def finish(self, claim: Claim, work: Work, generated: Generated) -> None:
        await self._owned(claim, lock=True)
        result = generated.result
        rows = []
        for position, section in enumerate(SECTIONS, start=1):
            content = result.sections[section]
            decision = result.decision(section)
            rows.append(
                {
                    "agent_session_id": claim.agent_session_id,
                    "archive_seq": claim.archive_seq,
                    "section": section.value,
                    "position": position,
                    "content": content,
                    "content_sha256": hashlib.sha256(content.encode()).hexdigest(),
                    "token_count": result.token_counts[section],
                    "item_count": result.item_counts[section],
                    "op_requested": None
                    if decision.requested is None
                    else decision.requested.value,
                    "op_applied": decision.applied.value,
                    "guard": None if decision.guard is None else decision.guard.value,
                    "reason": decision.reason.value,
                    "details": _json_safe(dict(decision.details)),
                    "generator": generated.generator,
                    "model": generated.model,
                    "prompt_version": generated.prompt_version,
                }
            )
        await self.archives.insert_sections(rows)
        usage = generated.usage
        await self.archives.set_fields(
            claim.agent_session_id,
            claim.archive_seq,
            status="done",
            overview=result.markdown,
            abstract=abstract_of(result.sections),
            generator=generated.generator,
            generator_note=generated.note,
            model=generated.model,
            prompt_version=generated.prompt_version,
            usage={
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "calls": usage.calls,
                "batches": generated.batches,
                "memories": 0,
            },
            covers_failed_archives=work.covers_failed_archives,
            upgraded_from_legacy=generated.upgraded_from_legacy,
            wm_tokens=result.total_tokens,
            lease_until=None,
            last_error=None,
            error_stage=None,
            finished_at=func.now(),
        )

    async def reschedule(self, claim: Claim, *, delay_s: float, stage: str, message: str) -> None:
        await self._owned(claim, lock=True)
        await self.archives.reschedule(
            claim.agent_session_id,
            claim.archive_seq,
            delay_s=delay_s,
            last_error=message[:2000],
            error_stage=stage,
        )

    async def fail(self, claim: Claim, *, stage: str, message: str) -> None:
        await self._owned(claim, lock=True)
        await self.archives.set_fields(
            claim.agent_session_id,
            claim.archive_seq,
            status="failed",
            lease_until=None,
            last_error=message[:2000],
            error_stage=stage,
            finished_at=func.now(),
        )
