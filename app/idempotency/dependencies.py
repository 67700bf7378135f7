"""Request dependencies of idempotent writes: the request's key and fingerprint."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends, Header, Request

from app.idempotency.keys import MAX_LENGTH, PATTERN, RequestKey, canonical_json, fingerprint
from app.tenancy.auth import Writer
from app.tenancy.principal import Principal

IdempotencyKeyHeader = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=MAX_LENGTH,
        pattern=PATTERN,
        description="retry safely: a request sent again with the same key (within 24 h) "
        "gets the first answer, byte for byte, and stores nothing twice",
    ),
]
"""The header itself, for a route that reads it as its own parameter (the append routes do:
one dependency fewer to resolve per request on the hottest path)."""


async def get_request_key(
    request: Request, principal: Writer, idempotency_key: IdempotencyKeyHeader = None
) -> RequestKey | None:
    return await request_key_of(request, principal, idempotency_key)


async def request_key_of(
    request: Request, principal: Principal, idempotency_key: str | None
) -> RequestKey | None:
    """The write's idempotency key and its request's fingerprint. The body is the route's,
    already parsed; it is compared as JSON (keys sorted, no spacing), so a retry serialised
    differently by another client library is still the same request."""
    if idempotency_key is None:
        return None
    raw = await request.body()
    body = canonical_json(await request.json()) if raw.strip() else b""
    return RequestKey(
        idempotency_key,
        fingerprint(
            method=request.method, path=request.url.path, user_id=principal.user_id, body=body
        ),
        _agent_session_of(request),
    )


def _agent_session_of(request: Request) -> uuid.UUID | None:
    named = request.path_params.get("agent_session_id")
    if named is None:
        return None
    try:
        return uuid.UUID(str(named))
    except ValueError:
        return None


RequestKeyDep = Annotated[RequestKey | None, Depends(get_request_key)]
