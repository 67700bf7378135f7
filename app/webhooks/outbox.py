"""The outbox of webhooks: an event becomes one delivery row per subscribed endpoint, inside the
caller's transaction, so it is written exactly when the state change it reports is.

Called by other features' jobs and services (an archive finishing or failing, memories
changing); never sends anything (the delivery loop does) and never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.tenancy.principal import Scope
from app.webhooks.events import envelope
from app.webhooks.repository import WebhookRepository


class WebhookOutbox:
    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.webhooks = WebhookRepository(db, Scope(tenant_id))

    async def emit(self, event_type: str, data: Mapping[str, Any]) -> uuid.UUID:
        """Queue ``event_type`` with ``data`` for every endpoint subscribed to it; returns the
        event's id (its ``webhook-id``, the same for every endpoint)."""
        event_id = uuid.uuid4()
        body = envelope(event_type, datetime.now(UTC), data)
        await self.webhooks.enqueue(event_id, event_type, body)
        return event_id
