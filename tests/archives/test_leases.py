"""Short leases renewed by a heartbeat (defect 5): a long job keeps its archive; a crashed
worker's archive is claimable again within one lease, not five minutes."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime

from sqlalchemy import text

from app.archives import queue
from app.archives.generation import Generated
from app.archives.plan import Resume
from app.archives.worker import ArchiveWorker, WorkerConfig
from app.archives.working_memory import WorkingMemory
from app.db import Database
from tests.conftest import AppFactory, TenantKeys, make_tenant
from tests.support.api import append, commit, create_session, user
from tests.support.archives import RecordingGenerator, archive_rows
from tests.support.clock import age_archive_leases

SHORT = WorkerConfig(lease_s=1.5, max_attempts=3, poll_s=0.05, backoff_base_s=0, backoff_max_s=0)


async def one_archive(database: Database, app_client: AppFactory) -> TenantKeys:
    keys = await make_tenant(database)
    async with app_client(database) as http:
        agent_session_id = await create_session(http, keys)
        await append(http, keys, agent_session_id, [user("a long job")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)
    return keys


def test_the_heartbeat_beats_three_times_a_lease() -> None:
    assert WorkerConfig(lease_s=30).heartbeat_s == 10
    assert SHORT.heartbeat_s == 0.5


class OutlivingItsLease(RecordingGenerator):
    """A job that returns only once the lease it was claimed with has passed (as the database
    tells time), so only the heartbeat's renewals can have kept the archive its own."""

    def __init__(self, database: Database, tenant_id: uuid.UUID) -> None:
        super().__init__()
        self.database = database
        self.tenant_id = tenant_id
        self.renewals = 0

    async def generate(
        self,
        prior: WorkingMemory,
        messages: Sequence[Mapping[str, object]],
        *,
        seqs: Sequence[int] | None = None,
        pins: Sequence[str] = (),
        pinned_seqs: frozenset[int] = frozenset(),
        resume: Resume | None = None,
    ) -> Generated:
        first = last = await self.lease_until()
        deadline = time.monotonic() + 60
        while True:
            async with self.database.tenant(self.tenant_id) as db:
                passed = await db.scalar(text("SELECT now() > :first"), {"first": first})
            current = await self.lease_until()
            if current != last:
                self.renewals += 1
                last = current
            if passed:
                break
            assert time.monotonic() < deadline, "the first lease never ran out"
            await asyncio.sleep(0.05)
        return await super().generate(
            prior, messages, seqs=seqs, pins=pins, pinned_seqs=pinned_seqs
        )

    async def lease_until(self) -> datetime:
        async with self.database.tenant(self.tenant_id) as db:
            until = await db.scalar(text("SELECT lease_until FROM archives"))
        assert isinstance(until, datetime)
        return until


async def test_a_job_longer_than_its_lease_keeps_its_archive(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await one_archive(own_database, app_client)
    long_job = OutlivingItsLease(own_database, keys.tenant_id)
    slow = ArchiveWorker(own_database, long_job, SHORT)
    other = ArchiveWorker(own_database, RecordingGenerator(), SHORT)
    job = asyncio.create_task(slow.run_once())
    while (await archive_rows(own_database, keys.tenant_id))[0]["status"] != "running":  # noqa: ASYNC110 - polling the database
        await asyncio.sleep(0.02)
    stolen = []
    while not job.done():
        claim = await other.run_once()
        if claim is not None:
            stolen.append(claim)
        await asyncio.sleep(0.1)
    assert (await job) is not None
    assert long_job.renewals >= 1, "the heartbeat renewed the lease"
    assert stolen == [], "the renewed lease was never claimable"
    [row] = await archive_rows(own_database, keys.tenant_id)
    assert (row["status"], row["attempt"]) == ("done", 1)


async def test_a_claim_without_heartbeats_is_claimable_after_one_lease(
    own_database: Database, own_admin_database: Database, app_client: AppFactory
) -> None:
    keys = await one_archive(own_database, app_client)
    lease_s = 60
    async with own_database.unscoped() as db:  # a worker that claims, then dies
        dead = await queue.claim_next(db, lease_s=lease_s)
    assert dead is not None
    survivor = ArchiveWorker(own_database, RecordingGenerator(), SHORT)
    assert await survivor.run_once() is None, "within the lease"
    assert await age_archive_leases(own_admin_database, lease_s / 2) == 1
    assert await survivor.run_once() is None, "half the lease has passed"
    await age_archive_leases(own_admin_database, lease_s / 2 + 1)
    claim = await survivor.run_once()
    assert claim is not None
    assert claim.attempt == 2
    [row] = await archive_rows(own_database, keys.tenant_id)
    assert (row["status"], row["attempt"]) == ("done", 2)
