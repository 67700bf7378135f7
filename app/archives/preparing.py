"""Preparing idle agent sessions' next archives (``prepared`` says what a checkpoint holds and
when a job may resume from it).

Appends tell the ``Preparer`` which agent sessions moved; once one has been idle for
``idle_s`` it plans the archive a commit would make now, runs the offline generation through
every batch but the last (going on from the session's previous checkpoint when that is still
good) and the memory rules over the same messages, and stores the checkpoint. A session is left
alone when its working memory is made by a model, when an archive of it is not done, when its
memory policy has the working memory off, or when its next archive would be a single batch.
The batches run in a thread, ``SLICE`` at a time, each slice's checkpoint stored in a short
transaction of its own (the messages are read in one before). Nothing of it is needed for
correctness: a checkpoint lost, stale or never made only means the job starts from the beginning.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncSession

from app.archives.generation import WorkingMemoryGenerator
from app.archives.job_repository import JobRepository
from app.archives.plan import Plan, known_of
from app.archives.prepared import (
    Checkpoint,
    checkpoint_from,
    config_key,
    fingerprint,
    resume_point,
)
from app.archives.prepared_repository import PreparedRepository, PreparedRow
from app.archives.repository import ArchiveRepository
from app.archives.service import split_point
from app.archives.working_memory import WorkingMemory
from app.db import Database
from app.memories.extraction import MemoryExtractor
from app.memories.policies import effective
from app.memories.policy_store import PolicyStore
from app.memories.rules import RuleScan
from app.metrics import PREPARED
from app.pins.service import pins_in_force
from app.sessions.repository import AgentSessionRepository
from app.tenancy.principal import Scope

logger = logging.getLogger(__name__)

SLICE: Final = 4
"""Batches run in one go before the checkpoint is stored: a long archive is prepared in short
stretches of work, and the preparation stops between two when the agent session moves again."""

Key = tuple[uuid.UUID, uuid.UUID]
"""(tenant, agent session)."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the next archive of an idle agent session would be made of."""

    prior: WorkingMemory
    messages: list[dict[str, object]]
    seqs: list[int]
    pinned_seqs: frozenset[int]
    extract: bool
    previous: Checkpoint | None
    redactions: int
    """How many of the agent session's messages had been redacted when they were read (its
    live messages are its own: a fork holds copies of those it was made with)."""


class Preparer:
    """Prepares the next archive of agent sessions idle for ``idle_s`` (offline generation)."""

    def __init__(
        self,
        database: Database,
        generator: WorkingMemoryGenerator,
        memories: MemoryExtractor | None,
        *,
        idle_s: float,
    ) -> None:
        if generator.chat is not None:
            raise ValueError("only the offline generation is prepared ahead")
        self.database = database
        self.generator = generator
        self.memories = memories if memories is not None and memories.reads_ahead else None
        self.idle_s = idle_s
        self.config = config_key(generator, memories)
        self._due: dict[Key, float] = {}
        self._moved = asyncio.Event()

    def moved(self, tenant_id: uuid.UUID, agent_session_ids: Iterable[uuid.UUID]) -> None:
        """Messages were appended to these agent sessions: prepare each once it is idle."""
        due = time.monotonic() + self.idle_s
        for agent_session_id in agent_session_ids:
            self._due.pop((tenant_id, agent_session_id), None)
            self._due[(tenant_id, agent_session_id)] = due
        self._moved.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Prepare sessions as they fall idle, oldest first, until ``stop``."""
        while not stop.is_set():
            now = time.monotonic()
            ready = [key for key, due in self._due.items() if due <= now]
            for key in ready:
                if stop.is_set():
                    return
                if self._due.get(key, now + 1) <= time.monotonic():
                    del self._due[key]
                    await self._prepare_logged(*key)
            wait = min(self._due.values(), default=now + 60) - time.monotonic()
            self._moved.clear()
            stopping = asyncio.ensure_future(stop.wait())
            moved = asyncio.ensure_future(self._moved.wait())
            await asyncio.wait(
                (stopping, moved), timeout=max(wait, 0.0), return_when=asyncio.FIRST_COMPLETED
            )
            stopping.cancel()
            moved.cancel()

    async def _prepare_logged(self, tenant_id: uuid.UUID, agent_session_id: uuid.UUID) -> None:
        try:
            outcome = await self.prepare(tenant_id, agent_session_id)
        except Exception:
            # Never needed for correctness: the archive's job starts from the beginning.
            logger.exception("preparing an archive failed", extra={"tenant_id": str(tenant_id)})
            outcome = "error"
        PREPARED.labels(outcome).inc()

    async def prepare(self, tenant_id: uuid.UUID, agent_session_id: uuid.UUID) -> str:
        """Prepare the agent session's next archive now, slice by slice; what became of it
        (``stored``, ``current`` when the checkpoint already covered it, or why not)."""
        inputs = await self.read(tenant_id, agent_session_id)
        if isinstance(inputs, str):
            return inputs
        # Off the event loop: requests go on being served while the batches run.
        plan = await asyncio.to_thread(self.plan, inputs)
        if len(plan.batches) < 2:
            return "single_batch"
        outcome, made = "current", inputs.previous
        while True:
            made = await asyncio.to_thread(self.make, inputs, plan, made)
            if made is None:
                return outcome
            outcome = await self.store(tenant_id, agent_session_id, inputs, made)
            if outcome != "stored" or (tenant_id, agent_session_id) in self._due:
                return outcome  # moved again: the next idle spell goes on from here

    async def read(self, tenant_id: uuid.UUID, agent_session_id: uuid.UUID) -> Inputs | str:
        """The next archive's input as a commit would make it now, or why there is none."""
        async with self.database.tenant(tenant_id) as db:
            return await _inputs(db, Scope(tenant_id), agent_session_id)

    def plan(self, inputs: Inputs) -> Plan:
        """The archive the input makes, cut into batches (synchronous: a thread runs it)."""
        return self.generator.plan(
            inputs.prior,
            inputs.messages,
            seqs=inputs.seqs,
            pinned_seqs=inputs.pinned_seqs,
            known=None if inputs.previous is None else inputs.previous.known,
        )

    def make(self, inputs: Inputs, plan: Plan, previous: Checkpoint | None) -> Checkpoint | None:
        """The checkpoint ``SLICE`` batches past ``previous`` (or past the start, when it cannot
        be resumed from), never past the plan's last batch; None when ``previous`` is there
        already. Pure and synchronous: a thread runs it."""
        upto = len(plan.batches) - 1
        start = resume_point(
            previous,
            plan,
            prior=inputs.prior,
            pinned_seqs=inputs.pinned_seqs,
            config=self.config,
            final=False,
        )
        done = 0 if start is None else start.batches
        if done >= upto:
            return None
        target = min(done + SLICE, upto)
        # The offline generation awaits nothing: a loop of its own in this thread runs it.
        progress = asyncio.run(self.generator.advance(inputs.prior, plan, start, target))
        end_seq = plan.end_seq(target)
        scan = None
        if self.memories is not None and inputs.extract:
            scan = _scan(inputs, end_seq, self.memories, None if start is None else previous)
        return Checkpoint(
            prior_archive_seq=inputs.prior.archive_seq,
            first_seq=plan.batches[0][1],
            end_seq=end_seq,
            budget=plan.budget,
            fingerprint=fingerprint(
                plan,
                target,
                prior=inputs.prior,
                pinned_seqs=inputs.pinned_seqs,
                config=self.config,
            ),
            progress=progress,
            scan=scan,
            known=known_of(plan, target),
        )

    async def store(
        self,
        tenant_id: uuid.UUID,
        agent_session_id: uuid.UUID,
        inputs: Inputs,
        checkpoint: Checkpoint,
    ) -> str:
        """Store the checkpoint made of ``inputs``: ``stored``, or ``redacted`` when a message
        of the agent session was redacted since they were read (nothing is stored)."""
        scope = Scope(tenant_id)
        try:
            return await self._store(scope, agent_session_id, inputs, checkpoint)
        except sa_exc.IntegrityError:
            return "gone"  # deleted meanwhile: its checkpoint would have gone with it

    async def _store(
        self, scope: Scope, agent_session_id: uuid.UUID, inputs: Inputs, checkpoint: Checkpoint
    ) -> str:
        async with self.database.tenant(scope.tenant_id) as db:
            stored = PreparedRepository(db, scope)
            # A message redacted since it was read must not live on here: a redaction holds
            # its agent session until it commits (and drops what was prepared from it).
            await stored.hold(agent_session_id)
            if await stored.redactions(agent_session_id) != inputs.redactions:
                return "redacted"
            await stored.put(
                PreparedRow(
                    agent_session_id=agent_session_id,
                    prior_archive_seq=checkpoint.prior_archive_seq,
                    first_seq=checkpoint.first_seq,
                    end_seq=checkpoint.end_seq,
                    budget=checkpoint.budget,
                    fingerprint=checkpoint.fingerprint,
                    state=checkpoint.state(),
                )
            )
        return "stored"


def _scan(
    inputs: Inputs, end_seq: int, memories: MemoryExtractor, previous: Checkpoint | None
) -> RuleScan:
    """The memory rules' scan of the messages up to ``end_seq``, going on from the scan of the
    checkpoint the generation went on from, when it has one."""
    scan, after = RuleScan(), 0
    if previous is not None and previous.scan is not None:
        scan, after = previous.scan, previous.end_seq
    numbered = [
        (seq, message)
        for seq, message in zip(inputs.seqs, inputs.messages, strict=True)
        if after < seq <= end_seq
    ]
    return scan.read(numbered, memories.rule_config)


async def _inputs(db: AsyncSession, scope: Scope, agent_session_id: uuid.UUID) -> Inputs | str:
    """The next archive's input as a commit would make it now, or why there is none."""
    agent_session = await AgentSessionRepository(db, scope).get(agent_session_id)
    if agent_session is None:
        return "gone"
    archives = ArchiveRepository(db, scope)
    prior = await archives.working_memory(
        agent_session_id, before_seq=agent_session.archive_count + 1
    )
    prior = prior or WorkingMemory.empty()
    if prior.archive_seq != agent_session.archive_count or prior.legacy_text is not None:
        return "archive_not_done"
    last_seq, archived = agent_session.last_seq, agent_session.archived_upto_seq
    keep = agent_session.keep_recent_count
    if last_seq - archived <= keep:
        return "within_keep_window"
    end_seq, _ = await split_point(archives, agent_session_id, last_seq, archived, last_seq - keep)
    if end_seq <= archived:
        return "within_keep_window"
    policies = await PolicyStore(db, scope).of_agent_session(agent_session_id)
    policy = effective(policies)
    if not policy.working_memory:
        return "working_memory_off"
    messages, retracted = await JobRepository(db, scope).covered_messages(
        agent_session_id, archived + 1, end_seq
    )
    kept = [
        (seq, message)
        for seq, message in enumerate(messages, start=archived + 1)
        if seq not in retracted
    ]
    pins = await pins_in_force(db, scope, agent_session_id)
    stored = PreparedRepository(db, scope)
    previous = checkpoint_from(await stored.get(agent_session_id))
    return Inputs(
        prior=prior,
        messages=[message for _, message in kept],
        seqs=[seq for seq, _ in kept],
        pinned_seqs=frozenset(pin.message_seq for pin in pins if pin.message_seq is not None),
        extract=policy.long_term_extraction,
        previous=previous,
        redactions=await stored.redactions(agent_session_id),
    )
