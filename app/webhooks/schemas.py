"""Request and response bodies of ``/v1/webhooks``: subscriptions, deliveries, attempts.

Leaves: each ``…Read`` is built by the presenter beside the endpoints from what a service
returned; the signing secret is part of the answer to a creation only.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.validation import require_storable

EventType = Literal["archive.done", "archive.failed", "memory.changed"]
DeliveryStatus = Literal["pending", "sending", "delivered", "failed"]


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, max_length=2000, description="an http:// or https:// URL")
    events: list[EventType] = Field(min_length=1, description="the event types to receive")
    description: str | None = Field(default=None, max_length=200)

    @field_validator("events")
    @classmethod
    def _distinct(cls, events: list[EventType]) -> list[EventType]:
        return list(dict.fromkeys(events))

    @model_validator(mode="after")
    def _storable(self) -> WebhookCreate:
        require_storable(self.model_dump())
        return self


class WebhookRead(BaseModel):
    id: uuid.UUID
    url: str
    events: list[EventType]
    description: str | None
    created_at: datetime


class WebhookCreated(WebhookRead):
    secret: str = Field(
        description="the signing secret (whsec_…, Standard Webhooks); shown once, keep it"
    )


class WebhookPage(BaseModel):
    items: list[WebhookRead]


class DeliveryAttemptRead(BaseModel):
    attempt: int
    started_at: datetime
    duration_ms: int
    status_code: int | None = Field(description="the endpoint's answer; null when none came")
    error: str | None = Field(description="why the attempt failed; null when it succeeded")


class DeliveryRead(BaseModel):
    id: uuid.UUID
    webhook_id: uuid.UUID
    event_id: str = Field(description="the webhook-id header: the same for every endpoint")
    event_type: EventType
    status: DeliveryStatus
    attempts_made: int
    next_attempt_at: datetime | None = Field(description="when it is tried next; null once final")
    payload: dict[str, Any] = Field(description="the body sent, as JSON")
    created_at: datetime
    finished_at: datetime | None
    attempts: list[DeliveryAttemptRead]


class DeliveryPage(BaseModel):
    items: list[DeliveryRead]
    next_cursor: str | None
