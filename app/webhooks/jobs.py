"""The delivery loop's short transactions: read what a claimed delivery sends, then record the
attempt and the delivery's next state, re-checking that the claim still holds.

Runs under the delivery's tenant; never sends (``delivery`` does, with no transaction open) and
never commits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.tenancy.principal import Scope
from app.webhooks.events import message_id
from app.webhooks.repository import DeliveryClaim, WebhookRepository
from app.webhooks.schedule import Next


@dataclass(frozen=True, slots=True)
class Outgoing:
    """What one attempt sends: where, with which secret, and the body."""

    url: str
    secret: str
    message_id: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AttemptResult:
    started_at: datetime
    duration_ms: int
    status_code: int | None
    error: str | None


class DeliveryJobService:
    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.webhooks = WebhookRepository(db, Scope(tenant_id))

    async def outgoing(self, claim: DeliveryClaim) -> Outgoing | None:
        """``None`` when the claim no longer holds, or the subscription was deleted."""
        found = await self.webhooks.claimed(claim.delivery_id, claim.attempt)
        if found is None:
            return None
        delivery, subscription = found
        return Outgoing(
            subscription.url, subscription.secret, message_id(delivery.event_id), delivery.payload
        )

    async def record(self, claim: DeliveryClaim, result: AttemptResult, then: Next) -> bool:
        """Store the attempt and the delivery's next state; False when another attempt holds
        the delivery now (nothing is written then)."""
        settled = await self.webhooks.settle(
            claim.delivery_id,
            claim.attempt,
            status=then.status,
            delay_s=then.delay_s,
            status_code=result.status_code,
            error=result.error,
        )
        if settled:
            await self.webhooks.insert_attempt(
                {
                    "delivery_id": claim.delivery_id,
                    "attempt": claim.attempt,
                    "started_at": result.started_at,
                    "duration_ms": result.duration_ms,
                    "status_code": result.status_code,
                    "error": result.error,
                }
            )
        return settled
