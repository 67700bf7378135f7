"""Time passing for a lease or a backoff, as the database sees it.

Leases and retry times are instants the database recorded (``now() + …``) and compares with
``now()``. A test that needs one of them to pass moves the recorded instant back, as the schema's
owner, instead of sleeping: the wait costs nothing, and the rows either side of it are exactly
the rows the service compares.
"""

from __future__ import annotations

from sqlalchemy import text

from app.db import Database


async def age_archive_leases(owner: Database, seconds: float) -> int:
    """Every running archive's lease, as if ``seconds`` had passed; the rows moved."""
    async with owner.unscoped() as db:
        moved = await db.execute(
            text(
                "UPDATE archives SET lease_until = lease_until - make_interval(secs => :s)"
                " WHERE status = 'running' AND lease_until IS NOT NULL"
            ),
            {"s": seconds},
        )
        # The claim's queue rows wait for the same leases.
        await db.execute(
            text(
                "UPDATE claimable_archives"
                " SET available_at = available_at - make_interval(secs => :s)"
            ),
            {"s": seconds},
        )
    return int(moved.rowcount)  # type: ignore[attr-defined]


async def age_webhook_deliveries(owner: Database, seconds: float) -> int:
    """Every unfinished delivery's due time (its backoff, or its lease while it is being sent),
    as if ``seconds`` had passed; the rows moved."""
    async with owner.unscoped() as db:
        moved = await db.execute(
            text(
                "UPDATE webhook_deliveries"
                " SET next_attempt_at = next_attempt_at - make_interval(secs => :s)"
                " WHERE status IN ('pending', 'sending')"
            ),
            {"s": seconds},
        )
        # The claim's queue rows wait for the same times.
        await db.execute(
            text(
                "UPDATE claimable_webhook_deliveries"
                " SET available_at = available_at - make_interval(secs => :s)"
            ),
            {"s": seconds},
        )
    return int(moved.rowcount)  # type: ignore[attr-defined]
