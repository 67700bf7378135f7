"""Phase 2: the archive worker. Claims archives, produces working memory, writes it back.

A job is an edge: it opens a short transaction to claim, another to read its input, calls the
model, extracts long-term memories and embeds them with no transaction open, then writes the
result in one transaction that re-checks the lease (DESIGN 6.2). While it works, a heartbeat
renews the lease every third of it, so leases are short and the archive of a worker that died
is claimable again within one lease. Used by the in-process worker of ``workmem serve``, by
``workmem worker`` processes, and by ``commit?wait=true`` to drain one agent session. Between
archives, workers also purge expired idempotency keys and run the tenants' retention passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
from sqlalchemy import exc as sa_exc

from app import telemetry
from app.archives import queue
from app.archives.generation import WorkingMemoryGenerator
from app.archives.jobs import ArchiveJobService, LeaseLost
from app.archives.prepared import Resumption, config_key
from app.archives.queue import Claim
from app.db import Database
from app.errors import Unavailable
from app.idempotency.service import purge_expired
from app.lifecycle.retention_jobs import run_pass as run_retention_pass
from app.llm.ports import PermanentModelError, TransientModelError
from app.memories.extraction import MemoryExtractor
from app.metrics import (
    ARCHIVE_RETRIES,
    ARCHIVES_FINISHED,
    GENERATORS,
    PHASE2_DURATION,
    RESUMED,
    record_decisions,
)
from app.models import ArchiveStatus
from app.usage.records import calls_for

logger = logging.getLogger(__name__)

OFFLINE_MEMORIES = MemoryExtractor.offline()
"""The default memory extractor: rules and the 384-dimension hashing embedder (stateless)."""


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    lease_s: float = 30.0
    max_attempts: int = 5
    poll_s: float = 1.0
    backoff_base_s: float = 2.0
    backoff_max_s: float = 300.0
    idempotency_ttl_s: float = 24 * 3600.0
    purge_every_s: float = 300.0
    retention_every_s: float = 300.0
    retention_batch: int = 500

    @property
    def heartbeat_s(self) -> float:
        """How often a running archive's lease is renewed: three beats may fail in a row
        before another worker can claim it."""
        return self.lease_s / 3


class ArchiveWorker:
    def __init__(
        self,
        database: Database,
        generator: WorkingMemoryGenerator,
        config: WorkerConfig | None = None,
        *,
        memories: MemoryExtractor | None = OFFLINE_MEMORIES,
        name: str | None = None,
    ) -> None:
        """``memories`` extracts and embeds each archive's long-term memories (the rules and
        the hashing embedder unless configured); ``None`` turns extraction off."""
        self.database = database
        self.generator = generator
        self.memories = memories
        self.config = config or WorkerConfig()
        self.name = name or f"worker-{uuid.uuid4().hex[:8]}"
        self.wakeup = asyncio.Event()
        self._detached: set[asyncio.Task[tuple[Claim, str] | None]] = set()
        self._job_ended = asyncio.Event()
        """Set when a job of this process ends (then replaced): a waiting commit whose archive
        another loop of the process holds wakes at once instead of at its next poll."""
        self._purged_at = time.monotonic()
        self._retained_at: float | None = None

    def backoff_s(self, attempt: int) -> float:
        delay = min(self.config.backoff_max_s, self.config.backoff_base_s * 2.0 ** (attempt - 1))
        jitter: float = random.uniform(0.8, 1.2)  # noqa: S311 - jitter, not security
        return delay * jitter

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and process archives until ``stop`` is set; back off while the DB is down."""
        failures = 0
        while not stop.is_set():
            try:
                claimed = await self.run_once()
                failures = 0
            except (Unavailable, sa_exc.DBAPIError, OSError) as error:
                failures += 1
                logger.warning("worker cannot reach the database", extra={"error": str(error)})
                await _wait(stop, min(30.0, 0.5 * 2**failures))
                continue
            except Exception:
                # A worker that dies silently stops all background processing: log, back off, go on.
                failures += 1
                logger.exception("worker loop error")
                await _wait(stop, min(30.0, 0.5 * 2**failures))
                continue
            if claimed is None:
                await self._purge_when_due()
                if not stop.is_set():
                    await self._retain_when_due()
                self.wakeup.clear()
                await _wait_any(stop, self.wakeup, self.config.poll_s)

    async def run_alone(self, stop: asyncio.Event, *, retry_s: float = 5.0) -> None:
        """``run`` in only one process of all that share the database and call this: the one
        holding an advisory lock (``workmem serve --workers N`` runs N processes, and one
        in-process worker). The lock goes with its connection, so when that process dies,
        another takes over within ``retry_s``."""
        while not stop.is_set():
            try:
                async with self.database.dedicated() as connection:
                    cursor = await connection.execute(_TRY_LOCK, {"key": _IN_PROCESS_WORKER_LOCK})
                    held = await cursor.fetchone()
                    if held is not None and held[0]:
                        logger.info("in-process archive worker started")
                        lost = asyncio.Event()
                        watch = asyncio.create_task(_watch(connection, stop, lost, retry_s))
                        try:
                            await self.run(lost)
                        finally:
                            watch.cancel()
                        if stop.is_set():
                            return
            except (Unavailable, psycopg.Error, OSError) as error:
                logger.warning("in-process worker lock unavailable", extra={"error": str(error)})
            await _wait(stop, retry_s)

    async def run_once(
        self, *, tenant_id: uuid.UUID | None = None, agent_session_id: uuid.UUID | None = None
    ) -> Claim | None:
        ran = await self._run_once(tenant_id=tenant_id, agent_session_id=agent_session_id)
        return None if ran is None else ran[0]

    async def _run_once(
        self, *, tenant_id: uuid.UUID | None = None, agent_session_id: uuid.UUID | None = None
    ) -> tuple[Claim, str] | None:
        """Claim and process one archive: the claim and its outcome, or ``None``."""
        async with self.database.unscoped() as db:
            claim = await queue.claim_next(
                db,
                lease_s=self.config.lease_s,
                tenant_id=tenant_id,
                agent_session_id=agent_session_id,
            )
        if claim is None:
            return None
        return claim, await self.process(claim)

    async def process(self, claim: Claim) -> str:
        """Phase 2 of a claimed archive; its outcome (``done``, ``retry``, ``failed``,
        ``lease_lost``)."""
        started = time.perf_counter()
        heartbeat = asyncio.create_task(self._heartbeat(claim))
        try:
            outcome = await self._process(claim)
        finally:
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
            ended, self._job_ended = self._job_ended, asyncio.Event()
            ended.set()
        PHASE2_DURATION.labels(outcome).observe(time.perf_counter() - started)
        return outcome

    @telemetry.traced(
        "workmem.archive.generate",
        lambda self, claim: {
            **telemetry.ids(claim.tenant_id, claim.agent_session_id, claim.archive_seq),
            "workmem.attempt": claim.attempt,
        },
    )
    async def _process(self, claim: Claim) -> str:
        """Phase 2 of one claimed archive; its outcome (``done``, ``retry``, ``failed``,
        ``lease_lost``) for the metrics. Model calls made for it are the archive's."""
        with calls_for(claim.tenant_id, claim.agent_session_id, claim.archive_seq):
            return await self._phase2(claim)

    async def _phase2(self, claim: Claim) -> str:
        started = time.perf_counter()
        stage = "load"
        try:
            async with self.database.tenant(claim.tenant_id) as db:
                work = await ArchiveJobService(db, claim.tenant_id).load(claim)
            stage = "generate"
            # The memory policy (read with the work) says which of the two the archive makes.
            generated = None
            resumption = Resumption(
                work.checkpoint,
                prior=work.prior,
                pinned_seqs=work.pinned_seqs,
                config=config_key(self.generator, self.memories),
            )
            if work.policy.working_memory:
                generated = await self.generator.generate(
                    work.prior,
                    work.openai_messages,
                    seqs=work.seqs,
                    pins=[pin.line for pin in work.pins],
                    pinned_seqs=work.pinned_seqs,
                    resume=resumption,
                )
                if self.generator.chat is None:
                    RESUMED.labels("yes" if resumption.progress else "no").inc()
            # Never raises: a failure to extract or embed is reported, the WM goes on.
            prepared = None
            if self.memories is not None and work.policy.long_term_extraction:
                after, numbered = work.memory_input(
                    resumption.progress if self.memories.reads_ahead else None
                )
                prepared = await self.memories.prepare(numbered, after=after)
            stage = "write"
            async with self.database.tenant(claim.tenant_id) as db:
                await ArchiveJobService(db, claim.tenant_id).finish(
                    claim, work, generated, prepared
                )
        except LeaseLost:
            logger.warning("lease lost; another worker owns the archive", extra=_ids(claim))
            return "lease_lost"
        except PermanentModelError as error:
            await self._fail(claim, stage, str(error))
            return "failed"
        except (TransientModelError, Unavailable, sa_exc.DBAPIError, OSError) as error:
            return await self._retry_or_fail(claim, stage, str(error) or type(error).__name__)
        except Exception as error:
            logger.exception("archive processing failed", extra=_ids(claim))
            return await self._retry_or_fail(claim, stage, f"{type(error).__name__}: {error}"[:500])
        ARCHIVES_FINISHED.labels("done").inc()
        if generated is not None:
            GENERATORS.labels(generated.generator).inc()
            telemetry.annotate(**{"workmem.generator": generated.generator})
            record_decisions(
                (None if d.guard is None else d.guard.value, d.reason.value)
                for d in generated.result.decisions
            )
        logger.info(
            "archive done",
            extra={
                **_ids(claim),
                "generator": None if generated is None else generated.generator,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        return "done"

    async def _heartbeat(self, claim: Claim) -> None:
        """Renew the claim's lease every ``heartbeat_s`` until cancelled. A beat that fails
        (the database is away) is tried again at the next; a lease found lost stops it, and
        the write at the end finds it lost too."""
        while True:
            await asyncio.sleep(self.config.heartbeat_s)
            try:
                async with self.database.tenant(claim.tenant_id) as db:
                    await ArchiveJobService(db, claim.tenant_id).renew(
                        claim, lease_s=self.config.lease_s
                    )
            except LeaseLost:
                return
            except (Unavailable, sa_exc.DBAPIError, OSError) as error:
                logger.warning(
                    "lease not renewed", extra={**_ids(claim), "error": type(error).__name__}
                )

    async def _purge_when_due(self) -> None:
        if time.monotonic() - self._purged_at < self.config.purge_every_s:
            return
        self._purged_at = time.monotonic()
        try:
            async with self.database.unscoped() as db:
                purged = await purge_expired(db, ttl_s=self.config.idempotency_ttl_s)
        except (Unavailable, sa_exc.DBAPIError, OSError) as error:
            logger.warning("idempotency keys not purged", extra={"error": type(error).__name__})
            return
        if purged:
            logger.info("expired idempotency keys purged", extra={"purged": purged})

    async def _retain_when_due(self) -> None:
        """A retention pass (``app.lifecycle.retention_jobs``) when the last is
        ``retention_every_s`` old, the first when the worker is first idle. A pass cut short is
        tried again at the next."""
        now = time.monotonic()
        last = self._retained_at
        if last is not None and now - last < self.config.retention_every_s:
            return
        self._retained_at = now
        try:
            await run_retention_pass(self.database, batch=self.config.retention_batch)
        except (Unavailable, sa_exc.DBAPIError, OSError) as error:
            logger.warning("retention pass cut short", extra={"error": type(error).__name__})

    async def _retry_or_fail(self, claim: Claim, stage: str, message: str) -> str:
        if claim.attempt >= self.config.max_attempts:
            await self._fail(claim, stage, f"{message} (after {claim.attempt} attempts)")
            return "failed"
        ARCHIVE_RETRIES.inc()
        delay = self.backoff_s(claim.attempt)
        logger.warning("archive will be retried", extra={**_ids(claim), "delay_s": round(delay, 2)})
        try:
            async with self.database.tenant(claim.tenant_id) as db:
                await ArchiveJobService(db, claim.tenant_id).reschedule(
                    claim, delay_s=delay, stage=stage, message=message
                )
        except (Unavailable, sa_exc.DBAPIError, LeaseLost):
            # The lease expires by itself; the archive becomes claimable again.
            logger.warning("could not reschedule; the lease will expire", extra=_ids(claim))
        return "retry"

    async def _fail(self, claim: Claim, stage: str, message: str) -> None:
        ARCHIVES_FINISHED.labels("failed").inc()
        logger.warning("archive failed", extra={**_ids(claim), "stage": stage})
        try:
            async with self.database.tenant(claim.tenant_id) as db:
                await ArchiveJobService(db, claim.tenant_id).fail(
                    claim, stage=stage, message=message
                )
        except (Unavailable, sa_exc.DBAPIError, LeaseLost):
            logger.warning("could not record the failure; the lease will expire", extra=_ids(claim))

    async def close(self) -> None:
        """Let jobs started by timed-out waits finish (their leases would expire otherwise)."""
        if self._detached:
            await asyncio.gather(*self._detached, return_exceptions=True)

    async def drain(
        self,
        tenant_id: uuid.UUID,
        agent_session_id: uuid.UUID,
        archive_seq: int,
        *,
        timeout_s: float,
    ) -> ArchiveStatus:
        """Process this agent session's archives, oldest first, until ``archive_seq`` finishes
        or ``timeout_s`` passes; returns the archive's status (``running`` when the wait ended
        first: the work goes on).

        It claims first (a commit's new archive is pending): when this call ran the archive
        itself, its outcome is the status and nothing is read again. When another worker holds
        it (or it waits for its backoff), the status is polled; a job that ends in this process
        (its in-process worker) wakes the wait at once."""
        deadline = time.monotonic() + timeout_s
        delay = 0.02
        claim_first = True
        while True:
            ended = self._job_ended
            if not claim_first:
                async with self.database.tenant(tenant_id) as db:
                    status = await ArchiveJobService(db, tenant_id).status(
                        agent_session_id, archive_seq
                    )
                if status.is_finished or time.monotonic() >= deadline:
                    return status
            claim_first = False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                continue
            # The job runs as its own task: when the wait times out, the work goes on.
            task = asyncio.create_task(
                self._run_once(tenant_id=tenant_id, agent_session_id=agent_session_id)
            )
            self._detached.add(task)
            task.add_done_callback(self._detached.discard)
            try:
                ran = await asyncio.wait_for(asyncio.shield(task), timeout=remaining)
            except TimeoutError:
                return ArchiveStatus.RUNNING
            if ran is None:
                # Another worker holds the lease, or the archive waits for its backoff.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ended.wait(), timeout=min(delay, remaining))
                delay = min(delay * 2, 0.5)
                continue
            claim, outcome = ran
            finished = _FINISHED.get(outcome)
            if claim.archive_seq == archive_seq and finished is not None:
                return finished
            # An older archive of the agent session ran first: ours is next, claim it at once.
            claim_first = claim.archive_seq < archive_seq


_FINISHED = {"done": ArchiveStatus.DONE, "failed": ArchiveStatus.FAILED}
"""The outcomes of a job that leave its archive finished."""

_IN_PROCESS_WORKER_LOCK = 0x776D776F726B6572
"""The advisory-lock key of the in-process archive worker (``b"wmworker"`` as a number)."""
_TRY_LOCK = "SELECT pg_try_advisory_lock(%(key)s)"


async def _watch(
    connection: psycopg.AsyncConnection[Any],
    stop: asyncio.Event,
    lost: asyncio.Event,
    every_s: float,
) -> None:
    """Set ``lost`` when ``stop`` is set or the lock's connection stops answering."""
    try:
        while not stop.is_set():
            await _wait(stop, every_s)
            await connection.execute("SELECT 1")
    except (psycopg.Error, OSError):
        logger.warning("the in-process worker lost its lock's connection")
    finally:
        lost.set()


def _ids(claim: Claim) -> dict[str, object]:
    return {
        "tenant_id": str(claim.tenant_id),
        "agent_session_id": str(claim.agent_session_id),
        "archive_seq": claim.archive_seq,
        "attempt": claim.attempt,
    }


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


async def _wait_any(stop: asyncio.Event, wakeup: asyncio.Event, seconds: float) -> None:
    waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wakeup.wait())]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
