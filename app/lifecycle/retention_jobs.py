"""The retention pass the workers run every ``WORKMEM_RETENTION_EVERY_S``: every tenant's
purges, one short transaction per tenant and kind, each bounded by the batch.

Owns the order (raw messages of old archives, idle agent sessions, expired memories), the
counting (Prometheus, the log) and what a failure stops: one tenant's error is logged and the
pass goes on to the next; a database that cannot be reached ends the pass. Safe to run in any
number of processes at once (each purge skips rows another holds) and again at any time (what
was purged is not found again).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from sqlalchemy import exc as sa_exc

from app.db import Database
from app.errors import DatabaseConflict, DatabaseTimeout, Unavailable
from app.lifecycle.retention_policy import check_batch
from app.lifecycle.retention_service import TenantPurge
from app.metrics import RETENTION_PASSES, RETENTION_PURGED
from app.tenancy import service as tenancy

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class PassReport:
    tenants: int = 0
    archives: int = 0
    archive_messages: int = 0
    idle_sessions: int = 0
    expired_memories: int = 0
    failed_tenants: int = 0

    @property
    def purged(self) -> int:
        return self.archive_messages + self.idle_sessions + self.expired_memories


async def run_pass(database: Database, *, batch: int) -> PassReport:
    """One pass over every tenant: at most ``batch`` rows of each kind per tenant."""
    batch = check_batch(batch)
    async with database.unscoped() as db:
        tenant_ids = await tenancy.tenant_ids(db)
    report = PassReport()
    for tenant_id in tenant_ids:
        report.tenants += 1
        try:
            await _purge_tenant(database, tenant_id, batch, report)
        except (DatabaseConflict, DatabaseTimeout, sa_exc.DBAPIError) as error:
            # A deadlock or a lock wait with a concurrent request: the next pass tries again.
            report.failed_tenants += 1
            logger.warning(
                "retention purge of a tenant failed",
                extra={"tenant_id": str(tenant_id), "error": type(error).__name__},
            )
        except Unavailable:
            RETENTION_PASSES.labels("error").inc()
            raise
    RETENTION_PASSES.labels("done" if not report.failed_tenants else "error").inc()
    if report.purged:
        logger.info(
            "retention purged",
            extra={
                "tenants": report.tenants,
                "archives": report.archives,
                "archive_messages": report.archive_messages,
                "idle_sessions": report.idle_sessions,
                "expired_memories": report.expired_memories,
            },
        )
    return report


async def _purge_tenant(
    database: Database, tenant_id: uuid.UUID, batch: int, report: PassReport
) -> None:
    async with database.tenant(tenant_id) as db:
        purge = TenantPurge(db, tenant_id)
        policy = await purge.policy()
        archived = await purge.archive_messages(policy, batch=batch)
    messages = sum(archive.message_count for archive in archived)
    report.archives += len(archived)
    report.archive_messages += messages
    RETENTION_PURGED.labels("archive_messages").inc(messages)
    if policy.idle_session_days is not None:
        async with database.tenant(tenant_id) as db:
            deleted = await TenantPurge(db, tenant_id).idle_sessions(policy, batch=batch)
        report.idle_sessions += len(deleted)
        RETENTION_PURGED.labels("idle_sessions").inc(len(deleted))
    async with database.tenant(tenant_id) as db:
        expired = await TenantPurge(db, tenant_id).expired_memories(batch=batch)
    report.expired_memories += expired
    RETENTION_PURGED.labels("expired_memories").inc(expired)
