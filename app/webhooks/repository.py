"""SQL for webhook subscriptions, the outbox of deliveries and their attempts, scoped to one
tenant; plus the delivery loop's claim across tenants.

``claim_due`` calls the privileged ``workmem_claim_webhook_deliveries`` (``docs/operations.md``),
which returns ids only; everything after it runs under the delivery's tenant. The claim reads
no tenant's deliveries across tenants: it takes due rows of ``claimable_webhook_deliveries``
(one per unfinished delivery, with when it is next due), which this module writes in the
statement that enqueues a delivery and moves or deletes in the one that settles an attempt
(``docs/scaling.md``). Flushes, never commits.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Delete, Insert, delete, func, insert, literal, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.dialects.postgresql import insert as upsert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import (
    ClaimableWebhookDelivery,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)
from app.tenancy.principal import Scope


@dataclass(frozen=True, slots=True)
class DeliveryClaim:
    tenant_id: uuid.UUID
    delivery_id: uuid.UUID
    attempt: int


async def claim_due(db: AsyncSession, *, lease_s: float, limit: int) -> list[DeliveryClaim]:
    """Claim up to ``limit`` due deliveries of any tenant for ``lease_s`` seconds."""
    rows = await db.execute(
        text(
            "SELECT tenant_id, delivery_id, attempt"
            " FROM workmem_claim_webhook_deliveries(:lease_s, :limit)"
        ),
        {"lease_s": lease_s, "limit": limit},
    )
    return [DeliveryClaim(*row) for row in rows.all()]


# One statement whatever the number of subscriptions (none: nothing is written): the deliveries
# and their rows of the claim's queue, due when the deliveries are. The tenant is a named
# parameter, so the statement names one tenant like every other of the request.
_ENQUEUE = text(
    "WITH queued AS ("
    " INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_id, event_type, payload)"
    " SELECT :tenant_id, s.webhook_id, :event_id, CAST(:event_type AS text),"
    " CAST(:payload AS jsonb)"
    " FROM webhook_subscriptions s"
    " WHERE s.tenant_id = :tenant_id AND CAST(:event_type AS text) = ANY(s.events)"
    " RETURNING tenant_id, delivery_id, next_attempt_at)"
    " INSERT INTO claimable_webhook_deliveries (tenant_id, delivery_id, available_at)"
    " SELECT tenant_id, delivery_id, next_attempt_at FROM queued"
)


class WebhookRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def lock_subscriptions(self) -> int:
        """Hold the tenant's subscriptions for this transaction (other creates of the tenant wait
        for it, in every process) and count them."""
        await self.db.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": f"workmem:webhook_subscriptions:{self.scope.tenant_id}"},
        )
        count = await self.db.scalar(
            select(func.count())
            .select_from(WebhookSubscription)
            .where(WebhookSubscription.tenant_id == self.scope.tenant_id)
        )
        return int(count or 0)

    async def insert_subscription(self, values: dict[str, Any]) -> WebhookSubscription:
        return (
            await self.db.scalars(
                insert(WebhookSubscription)
                .values(tenant_id=self.scope.tenant_id, **values)
                .returning(WebhookSubscription)
            )
        ).one()

    async def subscriptions(self) -> Sequence[WebhookSubscription]:
        return (
            await self.db.scalars(
                select(WebhookSubscription)
                .where(WebhookSubscription.tenant_id == self.scope.tenant_id)
                .order_by(WebhookSubscription.created_at, WebhookSubscription.webhook_id)
            )
        ).all()

    async def subscription(self, webhook_id: uuid.UUID) -> WebhookSubscription | None:
        return await self.db.scalar(
            select(WebhookSubscription).where(
                WebhookSubscription.tenant_id == self.scope.tenant_id,
                WebhookSubscription.webhook_id == webhook_id,
            )
        )

    async def delete_subscription(self, webhook_id: uuid.UUID) -> bool:
        """The subscription, its deliveries (by their foreign key) and their queue rows."""
        await self.db.execute(
            delete(ClaimableWebhookDelivery).where(
                ClaimableWebhookDelivery.tenant_id == self.scope.tenant_id,
                ClaimableWebhookDelivery.delivery_id.in_(
                    select(WebhookDelivery.delivery_id).where(
                        WebhookDelivery.tenant_id == self.scope.tenant_id,
                        WebhookDelivery.webhook_id == webhook_id,
                    )
                ),
            )
        )
        deleted = await self.db.scalar(
            delete(WebhookSubscription)
            .where(
                WebhookSubscription.tenant_id == self.scope.tenant_id,
                WebhookSubscription.webhook_id == webhook_id,
            )
            .returning(WebhookSubscription.webhook_id)
        )
        return deleted is not None

    async def enqueue(self, event_id: uuid.UUID, event_type: str, payload: dict[str, Any]) -> None:
        await self.db.execute(
            _ENQUEUE,
            {
                "tenant_id": self.scope.tenant_id,
                "event_id": event_id,
                "event_type": event_type,
                "payload": json.dumps(payload, ensure_ascii=False),
            },
        )

    async def deliveries(
        self,
        webhook_id: uuid.UUID,
        *,
        before: tuple[datetime, uuid.UUID] | None,
        limit: int,
    ) -> Sequence[WebhookDelivery]:
        """A subscription's deliveries, newest first, before the cursor's (created_at, id)."""
        statement = select(WebhookDelivery).where(
            WebhookDelivery.tenant_id == self.scope.tenant_id,
            WebhookDelivery.webhook_id == webhook_id,
        )
        if before is not None:
            statement = statement.where(
                tuple_(WebhookDelivery.created_at, WebhookDelivery.delivery_id) < before
            )
        statement = statement.order_by(
            WebhookDelivery.created_at.desc(), WebhookDelivery.delivery_id.desc()
        ).limit(limit)
        return (await self.db.scalars(statement)).all()

    async def attempts(self, delivery_ids: Sequence[uuid.UUID]) -> Sequence[WebhookAttempt]:
        if not delivery_ids:
            return []
        return (
            await self.db.scalars(
                select(WebhookAttempt)
                .where(
                    WebhookAttempt.tenant_id == self.scope.tenant_id,
                    WebhookAttempt.delivery_id.in_(delivery_ids),
                )
                .order_by(WebhookAttempt.delivery_id, WebhookAttempt.attempt)
            )
        ).all()

    async def claimed(
        self, delivery_id: uuid.UUID, attempt: int
    ) -> tuple[WebhookDelivery, WebhookSubscription] | None:
        """The delivery and its subscription while this attempt holds it."""
        row = (
            await self.db.execute(
                select(WebhookDelivery, WebhookSubscription)
                .join(
                    WebhookSubscription,
                    (WebhookSubscription.tenant_id == WebhookDelivery.tenant_id)
                    & (WebhookSubscription.webhook_id == WebhookDelivery.webhook_id),
                )
                .where(
                    WebhookDelivery.tenant_id == self.scope.tenant_id,
                    WebhookDelivery.delivery_id == delivery_id,
                    WebhookDelivery.status == "sending",
                    WebhookDelivery.attempt == attempt,
                )
            )
        ).first()
        return None if row is None else (row[0], row[1])

    async def insert_attempt(self, values: dict[str, Any]) -> None:
        await self.db.execute(
            insert(WebhookAttempt).values(tenant_id=self.scope.tenant_id, **values)
        )

    async def settle(
        self,
        delivery_id: uuid.UUID,
        attempt: int,
        *,
        status: str,
        delay_s: float | None,
        status_code: int | None,
        error: str | None,
    ) -> bool:
        """Record the attempt's outcome if it still holds the delivery; False when it does not
        (its lease passed and another attempt took over). In the same statement, the delivery's
        row of the claim's queue is due at the retry's time, or deleted once it is final."""
        values: dict[str, Any] = {
            "status": status,
            "last_status_code": status_code,
            "last_error": error,
        }
        if delay_s is not None:
            values["next_attempt_at"] = func.now() + func.make_interval(0, 0, 0, 0, 0, 0, delay_s)
        else:
            values["finished_at"] = func.now()
        settled = (
            update(WebhookDelivery)
            .where(
                WebhookDelivery.tenant_id == self.scope.tenant_id,
                WebhookDelivery.delivery_id == delivery_id,
                WebhookDelivery.status == "sending",
                WebhookDelivery.attempt == attempt,
            )
            .values(**values)
            .returning(WebhookDelivery.delivery_id, WebhookDelivery.next_attempt_at)
            .cte("settled")
        )
        queue = ClaimableWebhookDelivery
        moved: Insert | Delete
        if delay_s is not None:
            # Due at the retry's time (written again if the row were ever missing).
            retry = upsert(queue).from_select(
                ["tenant_id", "delivery_id", "available_at"],
                select(
                    literal(self.scope.tenant_id, UUID(as_uuid=True)),
                    settled.c.delivery_id,
                    settled.c.next_attempt_at,
                ),
            )
            moved = retry.on_conflict_do_update(
                index_elements=[queue.tenant_id, queue.delivery_id],
                set_={"available_at": retry.excluded.available_at},
            )
        else:
            moved = delete(queue).where(
                queue.tenant_id == self.scope.tenant_id,
                queue.delivery_id == settled.c.delivery_id,
            )
        # A data-modifying WITH runs whether or not the query reads it.
        found = await self.db.scalar(select(settled.c.delivery_id).add_cte(moved.cte("moved")))
        return found is not None
