"""The archive queue across tenants: a worker's claim of the next archive, and the operator's
re-queue of failed ones.

Both call privileged functions (``docs/operations.md``): a worker, or an operator, serves every
tenant; everything after a claim runs under the claimed archive's tenant. Flushes, never
commits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession


@dataclass(frozen=True, slots=True)
class Claim:
    tenant_id: uuid.UUID
    agent_session_id: uuid.UUID
    archive_seq: int
    attempt: int


async def claim_next(
    db: AsyncSession,
    *,
    lease_s: float,
    tenant_id: uuid.UUID | None = None,
    agent_session_id: uuid.UUID | None = None,
) -> Claim | None:
    """Claim the oldest claimable archive (optionally of one agent session) for ``lease_s``.

    A claim's transaction commits without waiting for its WAL to reach the disk
    (``synchronous_commit`` off, for that transaction only): a claim lost in a crash leaves the
    archive as it was, claimable, and the job's own write (which waits for the disk, and so
    for every WAL record before it) finds the lease not its own and writes nothing."""
    row = (
        await db.execute(
            text(
                "SELECT tenant_id, agent_session_id, archive_seq, attempt,"
                " set_config('synchronous_commit', 'off', true)"
                " FROM workmem_claim_archive(:lease_s, :tenant_id, :agent_session_id)"
            ),
            {"lease_s": lease_s, "tenant_id": tenant_id, "agent_session_id": agent_session_id},
        )
    ).first()
    return None if row is None else Claim(*row[:4])


async def requeue_failed(
    db: AsyncSession,
    *,
    tenant_id: uuid.UUID | None = None,
    agent_session_id: uuid.UUID | None = None,
    archive_seq: int | None = None,
) -> list[dict[str, object]]:
    """The operator's re-queue of failed archives, across tenants or narrowed by the filters."""
    rows = (
        await db.execute(
            text(
                "SELECT tenant_id, agent_session_id, archive_seq"
                " FROM workmem_requeue_failed(:tenant_id, :agent_session_id, :archive_seq)"
            ),
            {
                "tenant_id": tenant_id,
                "agent_session_id": agent_session_id,
                "archive_seq": archive_seq,
            },
        )
    ).all()
    return [
        {"tenant_id": str(row[0]), "agent_session_id": str(row[1]), "archive_seq": row[2]}
        for row in rows
    ]
