"""A model call as the usage table records it, and whom the calls of a piece of work are for.

``calls_for`` names the tenant, agent session and archive that the model and embedding calls made
inside it work for (the archive worker wraps each archive in it); outside one, a call made while
a request is served belongs to the request's tenant. Pure: no database, no SDK.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

Purpose = Literal["wm_create", "wm_update", "extraction", "embedding", "query_embedding", "other"]
Outcome = Literal["ok", "error", "refused"]


@dataclass(frozen=True, slots=True)
class CallScope:
    """Whom a call works for: a tenant, and within it an agent session and archive, if any."""

    tenant_id: uuid.UUID
    agent_session_id: uuid.UUID | None = None
    archive_seq: int | None = None
    purpose: Purpose | None = None
    """The purpose of the embeddings made inside, when the work says it (re-embedding)."""


@dataclass(frozen=True, slots=True)
class ModelCallRecord:
    """One call: never a prompt, a message or a key."""

    scope: CallScope
    purpose: Purpose
    model: str
    input_tokens: int
    output_tokens: int
    latency_ms: int
    outcome: Outcome
    at: datetime


_SCOPE: ContextVar[CallScope | None] = ContextVar("model_call_scope", default=None)


@contextmanager
def calls_for(
    tenant_id: uuid.UUID,
    agent_session_id: uuid.UUID | None = None,
    archive_seq: int | None = None,
    *,
    purpose: Purpose | None = None,
) -> Iterator[CallScope]:
    """Model calls made inside work for this tenant, agent session and archive."""
    scope = CallScope(tenant_id, agent_session_id, archive_seq, purpose)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def current_scope(request_tenant: str | None = None) -> CallScope | None:
    """The scope set by ``calls_for``, else the request's tenant (its id as text), else None."""
    scope = _SCOPE.get()
    if scope is not None:
        return scope
    if request_tenant is None:
        return None
    try:
        return CallScope(uuid.UUID(request_tenant))
    except ValueError:
        return None


def milliseconds(seconds: float) -> int:
    """A latency in whole milliseconds, never negative."""
    return max(0, round(seconds * 1000))
