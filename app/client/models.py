"""Results of the routes whose ``…Read`` schemas are not in this package yet (pins and history
search, DESIGN 18), and the one helper over a context: the list a chat call takes.

Every other result is the API's own schema (``app.*.schemas``), re-exported by ``app.client``.
The models here keep fields they do not know (``extra="allow"``), so a richer answer still
parses. Never sends a request.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from app.context.schemas import ContextRead


class PinRead(BaseModel):
    """An item pinned to an agent session: a text, or a message by its seq."""

    model_config = ConfigDict(extra="allow")
    id: uuid.UUID
    text: str | None = None
    seq: int | None = None
    created_at: datetime | None = None


class PinPage(BaseModel):
    model_config = ConfigDict(extra="allow")
    items: list[PinRead]


class HistoryHitRead(BaseModel):
    """A raw message matching a history search: where it is, and a snippet of it."""

    model_config = ConfigDict(extra="allow")
    seq: int
    archive_seq: int | None = None
    snippet: str
    role: str | None = None


class HistorySearchRead(BaseModel):
    model_config = ConfigDict(extra="allow")
    items: list[HistoryHitRead]


def chat_messages(context: ContextRead, system_prompt: str | None = None) -> list[dict[str, Any]]:
    """The context as ``messages`` for ``chat.completions.create``: one system message (your
    prompt, then the context's ``system_prompt_addition``), then the summary and raw messages.
    No system message when both are empty."""
    system = "\n\n".join(part for part in (system_prompt, context.system_prompt_addition) if part)
    head = [{"role": "system", "content": system}] if system else []
    return [*head, *context.messages]
