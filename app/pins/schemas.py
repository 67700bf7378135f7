"""Request and response bodies of pins (``/v1/sessions/{id}/pins``).

Leaves: ``PinRead`` is built by the presenter beside the endpoints; services never build it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.validation import SEQ_MAX, require_storable
from app.wm.sections import Section

PIN_TEXT_CHARS = 20_000
"""A pin's text in characters, checked before its tokens are counted (the token limit is
the real bound)."""


class PinCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str | None = Field(
        default=None,
        min_length=1,
        max_length=PIN_TEXT_CHARS,
        description="the fact to keep in every context; or give message_seq instead",
    )
    message_seq: int | None = Field(
        default=None,
        ge=1,
        le=SEQ_MAX,
        description="pin this message's exact text instead of a text",
    )
    section: Section | None = Field(
        default=None, description="the working-memory section the pin belongs with"
    )

    @field_validator("text")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        if value is None:
            return None
        require_storable(value)
        if not value.strip():
            raise ValueError("text must not be blank")
        return value.strip()

    @model_validator(mode="after")
    def _one_of(self) -> Self:
        if (self.text is None) == (self.message_seq is None):
            raise ValueError("give exactly one of text and message_seq")
        return self


class PinRead(BaseModel):
    pin_id: uuid.UUID
    text: str
    message_seq: int | None
    section: str | None
    token_count: int
    pinned_by: uuid.UUID
    created_at: datetime
    unpinned_at: datetime | None
    unpinned_by: uuid.UUID | None


class PinList(BaseModel):
    items: list[PinRead] = Field(description="oldest first")
    tokens: int = Field(description="tokens of the pins now in force")
    max_tokens: int = Field(description="the most the agent session's pins may hold in all")
