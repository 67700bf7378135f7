"""Preparing an append: every message checked against the limits, measured and counted once.

Owns the size limits of messages, batches and metadata (``Limits``) and what an append sends
(``PreparedAppend``): each message in OpenAI format, its tokens, its plain text, its bytes.
Large messages are prepared in a worker thread, off the event loop. Never touches the database;
``service`` stores what this prepares.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from app.config import Settings
from app.errors import InvalidInput, PayloadTooLarge
from app.sessions.schemas import MessageCreate
from app.validation import find_unstorable
from app.wm.tokens import message_text, message_tokens


@dataclass(frozen=True, slots=True)
class Limits:
    max_message_bytes: int = 1024 * 1024
    max_batch_messages: int = 500
    default_keep_recent_count: int = 10
    max_metadata_bytes: int = 64 * 1024
    quota_stored_bytes: int = 0
    """JSON bytes of messages and their metadata a tenant may hold; 0: no quota. Checked and
    recorded by the append statement itself."""
    quota_agent_sessions: int = 0
    """Agent sessions a tenant may hold; 0: no quota. Checked by the creating transaction."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            max_message_bytes=settings.max_message_bytes,
            max_batch_messages=settings.max_batch_messages,
            default_keep_recent_count=settings.default_keep_recent_count,
            max_metadata_bytes=settings.max_metadata_bytes,
            quota_stored_bytes=settings.quota_stored_bytes,
            quota_agent_sessions=settings.quota_agent_sessions,
        )


def check_metadata_size(metadata: object, limits: Limits, *, what: str) -> int:
    """The metadata's JSON bytes; 413 above its limit (it is stored beside every read of its
    owner)."""
    if not metadata:
        return 0
    size = len(json.dumps(metadata, ensure_ascii=False).encode())
    if size > limits.max_metadata_bytes:
        raise PayloadTooLarge(
            f"the metadata of {what} is {size} bytes; the limit is "
            f"{limits.max_metadata_bytes} bytes"
        )
    return size


@dataclass(frozen=True, slots=True)
class PreparedAppend:
    """Messages checked and measured, ready for the one statement that stores them."""

    messages: tuple[MessageCreate, ...]
    stored: tuple[dict[str, Any], ...]
    """Each message in OpenAI format, as stored."""
    token_counts: tuple[int, ...]
    texts: tuple[str, ...]
    """Plain text for search."""
    quota_bytes: int | None = None
    """The tenant's stored-bytes quota the statement checks (``None``: none); the statement
    counts the bytes itself, the same way for every caller."""


def prepare_append(messages: Sequence[MessageCreate], limits: Limits) -> PreparedAppend:
    """Check every message (nothing is stored when one fails) and count its tokens once."""
    if len(messages) > limits.max_batch_messages:
        raise PayloadTooLarge(
            f"at most {limits.max_batch_messages} messages per batch, got {len(messages)}"
        )
    stored: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        as_stored = message.openai_message()
        bad_at = find_unstorable({"message": as_stored, "metadata": message.metadata})
        if bad_at is not None:
            raise InvalidInput(
                "NUL characters and unpaired surrogates cannot be stored",
                errors=[
                    {
                        "loc": ["body", index, *bad_at],
                        "msg": "contains a NUL character or an unpaired surrogate",
                        "type": "unstorable_text",
                    }
                ],
            )
        size = len(json.dumps(as_stored, ensure_ascii=False).encode())
        if size > limits.max_message_bytes:
            raise PayloadTooLarge(
                f"message {index} is {size} bytes; the limit is "
                f"{limits.max_message_bytes} bytes per message"
            )
        check_metadata_size(message.metadata, limits, what=f"message {index}")
        stored.append(as_stored)
    return PreparedAppend(
        messages=tuple(messages),
        stored=tuple(stored),
        token_counts=tuple(message_tokens(message) for message in stored),
        texts=tuple(message_text(message) for message in stored),
        quota_bytes=limits.quota_stored_bytes or None,
    )


OFF_LOOP_CHARACTERS = 64 * 1024
"""Messages holding at least this much text are checked and counted in a worker thread:
tokenizing a MiB takes about 150 ms, which every other request would otherwise wait for."""


def _characters(messages: Sequence[MessageCreate]) -> int:
    total = 0
    for message in messages:
        if isinstance(message.content, str):
            total += len(message.content)
        elif message.content is not None:
            total += sum(len(getattr(part, "text", "") or "") for part in message.content)
        for call in message.tool_calls or ():
            total += len(call.function.arguments)
    return total


async def prepare_append_off_loop(
    messages: Sequence[MessageCreate], limits: Limits
) -> PreparedAppend:
    """``prepare_append``, in a worker thread when the messages are large."""
    if _characters(messages) >= OFF_LOOP_CHARACTERS:
        return await anyio.to_thread.run_sync(prepare_append, messages, limits)
    return prepare_append(messages, limits)
