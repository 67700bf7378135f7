"""Maps what the webhook service returns (stored subscriptions, deliveries and attempts) to the
response bodies of ``schemas``; the signing secret goes into the answer to a creation only."""

from __future__ import annotations

from collections.abc import Sequence

from app.models import WebhookAttempt, WebhookDelivery, WebhookSubscription
from app.webhooks.events import message_id
from app.webhooks.schemas import DeliveryAttemptRead, DeliveryRead, WebhookCreated, WebhookRead


def webhook_read(row: WebhookSubscription) -> WebhookRead:
    return WebhookRead(
        id=row.webhook_id,
        url=row.url,
        events=row.events,
        description=row.description,
        created_at=row.created_at,
    )


def webhook_created(row: WebhookSubscription) -> WebhookCreated:
    return WebhookCreated(**webhook_read(row).model_dump(), secret=row.secret)


def attempt_read(row: WebhookAttempt) -> DeliveryAttemptRead:
    return DeliveryAttemptRead.model_validate(row, from_attributes=True)


def delivery_read(row: WebhookDelivery, attempts: Sequence[WebhookAttempt]) -> DeliveryRead:
    final = row.status in ("delivered", "failed")
    return DeliveryRead(
        id=row.delivery_id,
        webhook_id=row.webhook_id,
        event_id=message_id(row.event_id),
        event_type=row.event_type,
        status=row.status,
        attempts_made=row.attempt,
        next_attempt_at=None if final else row.next_attempt_at,
        payload=row.payload,
        created_at=row.created_at,
        finished_at=row.finished_at,
        attempts=[attempt_read(attempt) for attempt in attempts],
    )
