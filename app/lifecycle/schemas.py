"""Request and response models of redaction."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.validation import require_storable


class RedactCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="why, kept with the redaction (never put the secret itself here)",
    )

    @model_validator(mode="after")
    def _storable(self) -> RedactCreate:
        require_storable(self.reason)
        return self


class RedactedCounts(BaseModel):
    working_memory_items: int = Field(description="items of section versions now [redacted]")
    archives: int = Field(description="archives whose overview was written again")
    memories: int = Field(description="long-term memories now [redacted]")
    memory_events: int = Field(description="memory history events whose content was redacted")
    pins: int = Field(description="pins of the message now [redacted]")
    idempotency_answers: int = Field(description="stored answers of the append now redacted")


class RedactionRead(BaseModel):
    seq: int
    role: str
    archived: bool = Field(description="whether the message was archived when redacted")
    redacted_at: datetime
    redacted_by: uuid.UUID = Field(description="the id of the API key that redacted it")
    reason: str | None
    already_redacted: bool = Field(
        description="true when it had been redacted before: nothing changed this time"
    )
    redacted: RedactedCounts
