"""The job side of an archive: what a worker reads and writes in its short transactions.

Owns loading a claimed archive's input (the prior working memory, its messages and those of the
failed archives it covers; retracted messages left out) and recording the outcome (seven
section versions, the long-term memory changes and ``done``, a retry, or ``failed``; ``done``
and ``failed`` with their webhook event in the outbox), each re-checking that the claim still
holds. Runs under the claimed archive's tenant; never calls a model or an embedder and never
commits (``worker`` owns both).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.generation import Generated
from app.archives.job_repository import JobRepository
from app.archives.plan import Progress
from app.archives.prepared import Checkpoint, checkpoint_from
from app.archives.prepared_repository import PreparedRepository
from app.archives.queue import Claim
from app.archives.records import ArchivedMessage, SectionVersionRow
from app.archives.repository import ArchiveRepository
from app.archives.working_memory import WorkingMemory
from app.db_errors import is_unavailable
from app.errors import NotFound
from app.memories.extraction import Prepared
from app.memories.jobs import MemoryJobService
from app.memories.policies import effective
from app.memories.policy import EVERYTHING, EffectivePolicy
from app.memories.policy_store import PolicyStore
from app.memories.records import Failure, FailureStage, MemoryReport, Source
from app.memories.rules import RuleScan
from app.models import Archive, ArchiveStatus
from app.pins.records import Pin
from app.pins.service import pins_in_force
from app.tenancy.principal import Scope
from app.webhooks.events import ARCHIVE_DONE, ARCHIVE_FAILED, archive_data
from app.webhooks.outbox import WebhookOutbox
from app.wm.sections import SECTIONS, Section

logger = logging.getLogger(__name__)


WORKING_MEMORY_OFF = "working memory off by the memory policy"
"""The ``generator_note`` of an archive done without a working memory."""


class LeaseLost(Exception):
    """The archive is no longer ours (its lease expired and another worker claimed it)."""


@dataclass(frozen=True, slots=True)
class Work:
    """A claimed archive's input: its row, the prior WM, and every message it must cover (in
    seq order, retracted ones left out), with where its memories come from and the agent
    session's pins in force (shown to the model beside the prior)."""

    archive: Archive
    prior: WorkingMemory
    messages: tuple[ArchivedMessage, ...]
    covers_failed_archives: list[int]
    source: Source
    pins: tuple[Pin, ...] = ()
    policy: EffectivePolicy = EVERYTHING
    """The memory policy the archive obeys (resolved when it was loaded)."""
    extract_from_seq: int = 0
    """The first message long-term memories are extracted from (earlier ones were, by a done
    archive without a working memory)."""
    checkpoint: Checkpoint | None = None
    """How far the archive was prepared ahead while its agent session was idle (``prepared``)."""

    @property
    def pinned_seqs(self) -> frozenset[int]:
        return frozenset(pin.message_seq for pin in self.pins if pin.message_seq is not None)

    def memory_input(
        self, resumed: Progress | None
    ) -> tuple[RuleScan | None, list[tuple[int, dict[str, Any]]]]:
        """The scan the memory rules go on from and the messages left to them: the checkpoint's
        scan and the messages after it when the generation resumed from that checkpoint and
        the memories start where it does; else no scan and every message (``numbered``)."""
        checkpoint = self.checkpoint
        if (
            resumed is None
            or checkpoint is None
            or checkpoint.scan is None
            or self.extract_from_seq != checkpoint.first_seq
        ):
            return None, self.numbered
        rest = [(seq, message) for seq, message in self.numbered if seq > checkpoint.end_seq]
        return checkpoint.scan, rest

    @property
    def openai_messages(self) -> list[dict[str, Any]]:
        return [covered.message for covered in self.messages]

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(covered.seq for covered in self.messages)

    @property
    def numbered(self) -> list[tuple[int, dict[str, Any]]]:
        """The messages to extract long-term memories from, with their seqs."""
        return [
            (covered.seq, covered.message)
            for covered in self.messages
            if covered.seq >= self.extract_from_seq
        ]


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
        self.scope = Scope(tenant_id)
        self.archives = ArchiveRepository(db, self.scope)
        self.job = JobRepository(db, self.scope)

    async def _owned(self, claim: Claim, *, lock: bool) -> Archive:
        archive = await self.archives.get(claim.agent_session_id, claim.archive_seq, lock=lock)
        if (
            archive is None
            or archive.status != ArchiveStatus.RUNNING
            or archive.attempt != claim.attempt
        ):
            raise LeaseLost(f"archive {claim.archive_seq} is not held by this attempt")
        return archive

    async def _hold(self, claim: Claim) -> None:
        """Lock the claimed archive for this transaction's writes; ``LeaseLost`` when this
        attempt no longer holds it."""
        if not await self.job.lock_attempt(
            claim.agent_session_id, claim.archive_seq, attempt=claim.attempt
        ):
            raise LeaseLost(f"archive {claim.archive_seq} is not held by this attempt")

    async def renew(self, claim: Claim, *, lease_s: float) -> None:
        """The heartbeat: the lease runs ``lease_s`` from now; ``LeaseLost`` if it is gone."""
        if not await self.job.renew_lease(
            claim.agent_session_id, claim.archive_seq, attempt=claim.attempt, lease_s=lease_s
        ):
            raise LeaseLost(f"archive {claim.archive_seq} is not held by this attempt")

    async def status(self, agent_session_id: uuid.UUID, archive_seq: int) -> ArchiveStatus:
        archive = await self.archives.get(agent_session_id, archive_seq)
        if archive is None:
            raise NotFound(f"archive {archive_seq} not found")
        return archive.status

    async def load(self, claim: Claim) -> Work:
        archive = await self._owned(claim, lock=False)
        agent_session_id = claim.agent_session_id
        prior = await self.archives.working_memory(agent_session_id, before_seq=claim.archive_seq)
        after_seq = 0 if prior is None else prior.archive_seq
        # Every archive between the prior and this one failed, was cleared, or was done without
        # a working memory (its memory policy had it off): archives of an agent session run in
        # order. Their messages ride along whole — generation batches them within the input
        # budget — so neither leaves a hole in the working memory (DESIGN 6.2).
        between = await self.archives.failed_between(
            agent_session_id, after_seq=after_seq, before_seq=claim.archive_seq, with_done=True
        )
        failed = [row for row in between if row.status != ArchiveStatus.DONE]
        start_seq = between[0].start_seq if between else archive.start_seq
        # Long-term memories come from the messages no done archive has extracted from yet.
        extract_from = archive.start_seq
        for row in reversed(between):
            if row.status == ArchiveStatus.DONE:
                break
            extract_from = row.start_seq
        # Messages the agent retracted while they were live never reach the working memory.
        messages, retracted = await self.job.covered_messages(
            agent_session_id, start_seq, archive.end_seq
        )
        kept = tuple(
            ArchivedMessage(seq, message)
            for seq, message in enumerate(messages, start=start_seq)
            if seq not in retracted
        )
        # One read of the agent-session row: its owner's labels and the memory policies.
        found = await PolicyStore(self.db, self.scope).of_agent_session(agent_session_id)
        return Work(
            archive=archive,
            prior=prior or WorkingMemory.empty(),
            messages=kept,
            covers_failed_archives=[row.archive_seq for row in failed],
            source=Source(agent_session_id, claim.archive_seq, found.user_id, found.agent_id),
            pins=tuple(await pins_in_force(self.db, self.scope, agent_session_id)),
            policy=effective(found),
            extract_from_seq=extract_from,
            checkpoint=checkpoint_from(
                await PreparedRepository(self.db, self.scope).get(agent_session_id)
            ),
        )

    async def finish(
        self,
        claim: Claim,
        work: Work,
        generated: Generated | None,
        memories: Prepared | None = None,
    ) -> None:
        """Write the seven section versions, the long-term memory changes and ``done`` in the
        caller's one transaction. A failure to store the memories rolls back only them (a
        savepoint) and is reported with stage ``store``: it never fails the working memory.
        Without ``generated`` (the memory policy has the working memory off), the archive is
        done with no working memory: no section versions, no overview."""
        await self._hold(claim)
        # What was prepared ahead of this archive is spent: the next one has another prior.
        await PreparedRepository(self.db, self.scope).drop(claim.agent_session_id)
        if generated is None:
            await self._finish_without_working_memory(claim, work, memories)
            return
        result = generated.result
        rows = []
        for position, section in enumerate(SECTIONS, start=1):
            content = result.sections[section]
            decision = result.decision(section)
            rows.append(
                SectionVersionRow(
                    agent_session_id=claim.agent_session_id,
                    archive_seq=claim.archive_seq,
                    section=section,
                    position=position,
                    content=content,
                    token_count=result.token_counts[section],
                    item_count=result.item_counts[section],
                    op_requested=None if decision.requested is None else decision.requested.value,
                    op_applied=decision.applied.value,
                    guard=None if decision.guard is None else decision.guard.value,
                    reason=decision.reason.value,
                    details=_json_safe(dict(decision.details)),
                    sources=[entry.as_json() for entry in result.sources.get(section, ())],
                    generator=generated.generator,
                    model=generated.model,
                    prompt_version=generated.prompt_version,
                )
            )
        await self.archives.insert_sections(rows)
        report = None
        if memories is not None:
            report = await self._store_memories(claim, work, memories)
        usage = generated.usage
        await self.archives.set_fields(
            claim.agent_session_id,
            claim.archive_seq,
            status=ArchiveStatus.DONE,
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
            },
            covers_failed_archives=work.covers_failed_archives,
            upgraded_from_legacy=generated.upgraded_from_legacy,
            wm_tokens=result.total_tokens,
            lease_until=None,
            last_error=None,
            error_stage=None,
            finished_at=func.now(),
            memories=None if report is None else report.as_json(),
        )
        # The webhook outbox row commits, or not, with the archive's result.
        await WebhookOutbox(self.db, claim.tenant_id).emit(
            ARCHIVE_DONE,
            archive_data(
                agent_session_id=claim.agent_session_id,
                archive_seq=claim.archive_seq,
                start_seq=work.archive.start_seq,
                end_seq=work.archive.end_seq,
                status=ArchiveStatus.DONE.value,
                user_id=work.source.user_id,
                agent_id=work.source.agent_id,
                generator=generated.generator,
                abstract=abstract_of(result.sections),
            ),
        )

    async def _finish_without_working_memory(
        self, claim: Claim, work: Work, memories: Prepared | None
    ) -> None:
        report = None if memories is None else await self._store_memories(claim, work, memories)
        await self.archives.set_fields(
            claim.agent_session_id,
            claim.archive_seq,
            status=ArchiveStatus.DONE,
            generator_note=WORKING_MEMORY_OFF,
            usage={"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "batches": 0},
            lease_until=None,
            last_error=None,
            error_stage=None,
            finished_at=func.now(),
            memories=None if report is None else report.as_json(),
        )
        await WebhookOutbox(self.db, claim.tenant_id).emit(
            ARCHIVE_DONE,
            archive_data(
                agent_session_id=claim.agent_session_id,
                archive_seq=claim.archive_seq,
                start_seq=work.archive.start_seq,
                end_seq=work.archive.end_seq,
                status=ArchiveStatus.DONE.value,
                user_id=work.source.user_id,
                agent_id=work.source.agent_id,
            ),
        )

    async def _store_memories(self, claim: Claim, work: Work, memories: Prepared) -> MemoryReport:
        writer = MemoryJobService(self.db, claim.tenant_id)
        try:
            async with self.db.begin_nested():
                return await writer.apply(memories, work.source, work.policy)
        except sa_exc.DBAPIError as error:
            if is_unavailable(error):
                raise
            logger.warning("storing memories failed", extra={"error": str(error.orig)[:200]})
            return replace(
                memories.report(),
                failed=Failure(
                    FailureStage.STORE, f"{type(error.orig).__name__}: {error.orig}"[:500]
                ),
            )

    async def reschedule(self, claim: Claim, *, delay_s: float, stage: str, message: str) -> None:
        await self._hold(claim)
        await self.archives.reschedule(
            claim.agent_session_id,
            claim.archive_seq,
            delay_s=delay_s,
            last_error=message[:2000],
            error_stage=stage,
        )

    async def fail(self, claim: Claim, *, stage: str, message: str) -> None:
        archive = await self._owned(claim, lock=True)
        await self.archives.set_fields(
            claim.agent_session_id,
            claim.archive_seq,
            status=ArchiveStatus.FAILED,
            lease_until=None,
            last_error=message[:2000],
            error_stage=stage,
            finished_at=func.now(),
        )
        user_id, agent_id = await self.archives.owner(claim.agent_session_id)
        await WebhookOutbox(self.db, claim.tenant_id).emit(
            ARCHIVE_FAILED,
            archive_data(
                agent_session_id=claim.agent_session_id,
                archive_seq=claim.archive_seq,
                start_seq=archive.start_seq,
                end_seq=archive.end_seq,
                status=ArchiveStatus.FAILED.value,
                user_id=user_id,
                agent_id=agent_id,
                error_stage=stage,
                error=message[:2000],
            ),
        )
