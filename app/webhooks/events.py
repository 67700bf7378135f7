"""The events a webhook reports and the body each delivery sends, as Standard Webhooks shapes
them: ``{"type", "timestamp", "data"}``, with a message id stable across retries.

Pure: values in, JSON-ready dicts out. Never writes a row (``outbox``) or sends (``delivery``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

ARCHIVE_DONE: Final = "archive.done"
ARCHIVE_FAILED: Final = "archive.failed"
MEMORY_CHANGED: Final = "memory.changed"
EVENT_TYPES: Final = (ARCHIVE_DONE, ARCHIVE_FAILED, MEMORY_CHANGED)


def message_id(event_id: uuid.UUID) -> str:
    """The ``webhook-id`` of an event: one per event, the same for every endpoint and every
    retry, so a receiver can drop duplicates."""
    return f"msg_{event_id.hex}"


def envelope(event_type: str, occurred_at: datetime, data: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": event_type, "timestamp": occurred_at.isoformat(), "data": dict(data)}


def archive_data(
    *,
    agent_session_id: uuid.UUID,
    archive_seq: int,
    start_seq: int,
    end_seq: int,
    status: str,
    user_id: str | None,
    agent_id: str | None,
    generator: str | None = None,
    abstract: str | None = None,
    error_stage: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """The data of ``archive.done`` (with generator and abstract) or ``archive.failed`` (with
    the stage and error)."""
    data: dict[str, Any] = {
        "agent_session_id": str(agent_session_id),
        "archive_seq": archive_seq,
        "start_seq": start_seq,
        "end_seq": end_seq,
        "status": status,
        "user_id": user_id,
        "agent_id": agent_id,
    }
    if status == "failed":
        data |= {"error_stage": error_stage, "error": error}
    else:
        data |= {"generator": generator, "abstract": abstract}
    return data


def memory_data(
    *,
    user_id: str | None,
    changes: Sequence[tuple[str, uuid.UUID]],
    agent_session_id: uuid.UUID | None = None,
    archive_seq: int | None = None,
) -> dict[str, Any]:
    """The data of ``memory.changed``: which memories changed how (``ADD``, ``UPDATE``,
    ``SUPERSEDE``, ``DELETE``), and the archive whose messages caused it, if any."""
    counts: dict[str, int] = {}
    for event, _ in changes:
        counts[event] = counts.get(event, 0) + 1
    return {
        "user_id": user_id,
        "agent_session_id": None if agent_session_id is None else str(agent_session_id),
        "archive_seq": archive_seq,
        "counts": counts,
        "changes": [{"event": event, "memory_id": str(memory_id)} for event, memory_id in changes],
    }
