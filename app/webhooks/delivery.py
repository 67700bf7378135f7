"""The delivery loop: claims due deliveries of every tenant, sends each signed, records the
attempt, and schedules a retry with backoff until the endpoint answers 2xx or attempts run out.

An edge like the archive worker: a short transaction to claim (the privileged function), one
under the delivery's tenant to read it, the HTTP request with no transaction open, then one to
record the outcome, which re-checks the claim. All state is in Postgres, so a restart loses
nothing: a delivery whose process died is due again when its lease passes. Redirects are never
followed, and the destination is vetted again before every attempt.

An attempt resolves the host once, vets those addresses and connects to the first of them (a
name that answers a public address to the check and a private one to the connection gets
nowhere); HTTPS still sends the host name (SNI) and verifies the certificate against it, and
connections are never reused, so one verified for one name never carries another's request.
What an attempt records of a failure is coarse (no address, no reason a connection failed):
the deliveries list must not map the network behind the endpoint. The log has the detail.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import ssl
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
from sqlalchemy import exc as sa_exc

from app.db import Database
from app.errors import Unavailable
from app.webhooks import repository
from app.webhooks.destinations import DestinationRefused, Resolver, refusal, resolve, target
from app.webhooks.jobs import AttemptResult, DeliveryJobService, Outgoing
from app.webhooks.repository import DeliveryClaim
from app.webhooks.schedule import RetrySchedule, after_attempt, is_success
from app.webhooks.signing import signed_headers

logger = logging.getLogger(__name__)

REFUSED = "destination refused: not a public address, or no address at all"
UNREACHABLE = "no answer: the connection failed, timed out or broke"
"""What a failed attempt records, whatever the cause (the log line has the detail)."""


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
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.database = database
        self.config = config or DeliveryConfig()
        self.resolver = resolver
        self.http = httpx.AsyncClient(
            timeout=self.config.timeout_s,
            follow_redirects=False,
            transport=transport,
            verify=verify,
            limits=httpx.Limits(max_keepalive_connections=0),
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
            address = await self.vetted_address(outgoing.url)
        except DestinationRefused as error:
            logger.info("webhook destination refused", extra={"error": str(error)})
            return result(None, REFUSED)
        body = json.dumps(outgoing.payload, separators=(",", ":"), ensure_ascii=False)
        headers = signed_headers(outgoing.secret, outgoing.message_id, started_at, body)
        request = self.http.build_request(
            "POST", outgoing.url, content=body.encode(), headers=headers
        )
        # The Host header stays the URL's; the connection goes to the vetted address, and TLS
        # names (SNI) and verifies the URL's host.
        host = request.url.host
        request.url = request.url.copy_with(host=address)
        if request.url.scheme == "https":
            request.extensions["sni_hostname"] = host
        try:
            # The answer's body is never read: an endpoint owes us a status, nothing more.
            response = await self.http.send(request, stream=True)
            await response.aclose()
        except httpx.HTTPError as error:
            logger.info(
                "webhook attempt failed",
                extra={"error": f"{type(error).__name__}: {error}"[:500]},
            )
            return result(None, UNREACHABLE)
        status = response.status_code
        return result(status, None if is_success(status) else f"the endpoint answered {status}")

    async def vetted_address(self, url: str) -> str:
        """The one address this attempt connects to: the host resolved once, every address it
        gave vetted; ``DestinationRefused`` otherwise."""
        host, port = target(url)
        addresses = await self.resolver(host, port)
        reason = refusal(host, addresses, allow_private=self.config.allow_private)
        if reason is not None:
            raise DestinationRefused(reason)
        return addresses[0].split("%", 1)[0]

    async def close(self) -> None:
        await self.http.aclose()


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
