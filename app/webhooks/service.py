"""Subscriptions of a tenant: create (with a new signing secret), list, delete, and the
deliveries of one with their attempts.

Runs inside the request's transaction (flushes, never commits). The destination check resolves
DNS, so the endpoint runs it before opening the transaction (``destinations.vet``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.cursors import decode_cursor, encode_cursor
from app.errors import Conflict, NotFound
from app.models import WebhookAttempt, WebhookDelivery, WebhookSubscription
from app.tenancy.principal import Principal, Scope
from app.webhooks.repository import WebhookRepository
from app.webhooks.schemas import WebhookCreate
from app.webhooks.signing import new_secret


@dataclass(frozen=True, slots=True)
class DeliveryHistory:
    deliveries: Sequence[tuple[WebhookDelivery, list[WebhookAttempt]]]
    next_cursor: str | None


class WebhookService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.webhooks = WebhookRepository(db, Scope(principal.tenant_id))

    async def create(self, body: WebhookCreate, *, limit: int) -> WebhookSubscription:
        """Subscribe, unless the tenant already holds ``limit`` subscriptions (checked and
        written under one lock of the tenant's subscriptions, so concurrent creates cannot
        pass it)."""
        held = await self.webhooks.lock_subscriptions()
        if held >= limit:
            raise Conflict(
                f"this tenant has {held} webhook subscriptions, the most it may hold "
                f"(WORKMEM_WEBHOOKS_MAX_SUBSCRIPTIONS = {limit}); delete one first"
            )
        return await self.webhooks.insert_subscription(
            {
                "url": body.url,
                "events": list(body.events),
                "description": body.description,
                "secret": new_secret(),
            }
        )

    async def list(self) -> Sequence[WebhookSubscription]:
        return await self.webhooks.subscriptions()

    async def delete(self, webhook_id: uuid.UUID) -> None:
        if not await self.webhooks.delete_subscription(webhook_id):
            raise NotFound(f"webhook {webhook_id} not found")

    async def deliveries(
        self, webhook_id: uuid.UUID, *, cursor: str | None, limit: int
    ) -> DeliveryHistory:
        if await self.webhooks.subscription(webhook_id) is None:
            raise NotFound(f"webhook {webhook_id} not found")
        before = None if cursor is None else decode_cursor(cursor)
        rows = await self.webhooks.deliveries(webhook_id, before=before, limit=limit)
        attempts: dict[uuid.UUID, list[WebhookAttempt]] = {row.delivery_id: [] for row in rows}
        for attempt in await self.webhooks.attempts(list(attempts)):
            attempts[attempt.delivery_id].append(attempt)
        last = rows[-1] if len(rows) == limit else None
        return DeliveryHistory(
            [(row, attempts[row.delivery_id]) for row in rows],
            None if last is None else encode_cursor(last.created_at, last.delivery_id),
        )
