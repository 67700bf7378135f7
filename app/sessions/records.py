"""The stored message: the one type a message has inside the service, once it has a ``seq``.

Requests arrive as ``schemas.MessageCreate`` and leave as ``schemas.MessageRead``; between the
two, appends, archive jobs, expand and context assembly all see this value. Pure data: no
database, no web framework, so the pure context assembly can take it as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

MessageRole = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One row of ``messages``: the OpenAI-format ``message`` as sent, plus what we derived."""

    seq: int
    role: MessageRole
    turn: int
    message: Mapping[str, Any]
    token_count: int
    metadata: Mapping[str, Any] | None
    created_at: datetime
    retracted_at: datetime | None = None
    """When its agent retracted it (left out of the context), if it did."""
    redacted_at: datetime | None = None
    """When its content was replaced by ``[redacted]``, if it was."""


@dataclass(frozen=True, slots=True)
class NewestArchive:
    """The newest archive of an agent session, as its reads report it (read in the same
    statement as the agent-session row)."""

    archive_seq: int
    start_seq: int
    end_seq: int
    status: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool result of an agent session: the text of the ``tool`` message that answers a
    call, found by the call's id (unique within the agent session), with the called tool's
    name (``""`` when no assistant message names the call)."""

    tool_call_id: str
    tool_name: str
    seq: int
    text: str
    created_at: datetime
    redacted: bool
    retracted: bool
