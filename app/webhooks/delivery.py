"""The delivery loop: claims due deliveries of every tenant, sends each signed, records the
attempt, and schedules a retry with backoff until the endpoint answers 2xx or attempts run out.

An edge like the archive worker: a short transaction to claim (the privileged function), one
under the delivery's tenant to read it, the HTTP request with no transaction open, then one to
record the outcome, which re-checks the claim. All state is in Postgres, so a restart loses
nothing: a delivery whose process died is due again when its lease passes. Redirects are never
followed, and the destination is vetted again before every attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
from sqlalchemy import exc as sa_exc

from app.db import Database
from app.errors import Unavailable
from app.webhooks import repository
from app.webhooks.destinations import DestinationRefused, Resolver, resolve, vet
from app.webhooks.jobs import AttemptResult, DeliveryJobService, Outgoing
from app.webhooks.repository import DeliveryClaim
from app.webhooks.schedule import RetrySchedule, after_attempt, is_success
from app.webhooks.signing import signed_headers

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeliveryConfig:
    poll_s: float = 1.0
    lease_s: float = 60.0
    """How long a claimed delivery is ours; longer than ``timeout_s`` with room to record."""
    batch: int = 16
    """Deliveries claimed, and sent concurrently, at once."""
    timeout_s: float = 10.0
    allow_private: bool = False
    schedule: RetrySchedule = field(default_factory=RetrySchedule)


class WebhookDeliverer:
    def __init__(
        self,
        database: Database,
        config: DeliveryConfig | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: Resolver = resolve,
    ) -> None:
        self.database = database
        self.config = config or DeliveryConfig()
        self.resolver = resolver
        self.http = httpx.AsyncClient(
            timeout=self.config.timeout_s, follow_redirects=False, transport=transport
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Deliver until ``stop`` is set; back off while the database is unreachable."""
        failures = 0
        while not stop.is_set():
            try:
                delivered = await self.run_once()
                failures = 0
            except (Unavailable, sa_exc.DBAPIError, OSError) as error:
                failures += 1
                logger.warning(
                    "webhook delivery cannot reach the database", extra={"error": str(error)}
                )
                await _wait(stop, min(30.0, 0.5 * 2**failures))
                continue
            except Exception:
                # A loop that dies silently stops every delivery: log, back off, go on. A claim
                # left unrecorded is due again when its lease passes.
                failures += 1
                logger.exception("webhook delivery loop error")
                await _wait(stop, min(30.0, 0.5 * 2**failures))
                continue
            if delivered == 0:
                await _wait(stop, self.config.poll_s)

    async def run_once(self) -> int:
        """Claim one batch and send it; returns how many deliveries were claimed."""
        async with self.database.unscoped() as db:
            claims = await repository.claim_due(
                db, lease_s=self.config.lease_s, limit=self.config.batch
            )
        await asyncio.gather(*(self.deliver(claim) for claim in claims))
        return len(claims)

    async def deliver(self, claim: DeliveryClaim) -> None:
        async with self.database.tenant(claim.tenant_id) as db:
            outgoing = await DeliveryJobService(db, claim.tenant_id).outgoing(claim)
        if outgoing is None:
            return
        result = await self.attempt(outgoing)
        jitter: float = random.uniform(0.8, 1.2)  # noqa: S311 - jitter, not security
        then = after_attempt(result.status_code, claim.attempt, self.config.schedule, jitter)
        async with self.database.tenant(claim.tenant_id) as db:
            recorded = await DeliveryJobService(db, claim.tenant_id).record(claim, result, then)
        logger.info(
            "webhook attempt",
            extra={
                "tenant_id": str(claim.tenant_id),
                "delivery_id": str(claim.delivery_id),
                "attempt": claim.attempt,
                "status_code": result.status_code,
                "outcome": then.status if recorded else "lease_lost",
            },
        )

    async def attempt(self, outgoing: Outgoing) -> AttemptResult:
        """One signed POST; never raises: every failure is the attempt's ``error``."""
        started_at = datetime.now(UTC)
        started = time.perf_counter()

        def result(status_code: int | None, error: str | None) -> AttemptResult:
            elapsed = round((time.perf_counter() - started) * 1000)
            return AttemptResult(started_at, elapsed, status_code, error)

        try:
            await vet(outgoing.url, allow_private=self.config.allow_private, resolver=self.resolver)
        except DestinationRefused as error:
            return result(None, f"destination refused: {error}")
        body = json.dumps(outgoing.payload, separators=(",", ":"), ensure_ascii=False)
        headers = signed_headers(outgoing.secret, outgoing.message_id, started_at, body)
        try:
            # The answer's body is never read: an endpoint owes us a status, nothing more.
            async with self.http.stream(
                "POST", outgoing.url, content=body.encode(), headers=headers
            ) as response:
                status = response.status_code
        except httpx.HTTPError as error:
            return result(None, f"{type(error).__name__}: {error}"[:500])
        return result(status, None if is_success(status) else f"the endpoint answered {status}")

    async def close(self) -> None:
        await self.http.aclose()


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
