"""The authentication dependencies: a tenant principal from an API key, or the operator token.

The tenant is taken from the credential alone; nothing in a body, query or header widens it.
Verified keys are cached for a few seconds per process so a request costs one transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from app.config import Settings
from app.db import Database
from app.errors import Forbidden, Unauthenticated
from app.observability import bind_tenant
from app.tenancy import service
from app.tenancy.principal import Principal, Role
from app.web.state import Slot


def credential_from(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    api_key = request.headers.get("x-api-key")
    return api_key.strip() if api_key and api_key.strip() else None


@dataclass(slots=True)
class Authenticator:
    database: Database
    settings: Settings
    ttl_s: float = 5.0
    _cache: dict[str, tuple[float, Principal]] = field(default_factory=dict)

    def is_operator_token(self, token: str) -> bool:
        configured = self.settings.admin_token
        if configured is None or not configured.get_secret_value():
            return False
        return hmac.compare_digest(token.encode(), configured.get_secret_value().encode())

    async def principal(self, token: str) -> Principal:
        cache_key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(cache_key)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        async with self.database.unscoped() as db:
            principal = await service.verify_key(db, token)
        if principal is None:
            self._cache.pop(cache_key, None)
            raise Unauthenticated("the API key is unknown, malformed or revoked")
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[cache_key] = (now + self.ttl_s, principal)
        return principal

    def forget(self) -> None:
        """Drop cached principals (after a revocation in this process)."""
        self._cache.clear()


AUTHENTICATOR = Slot[Authenticator]("authenticator")
"""The process's authenticator: verifies keys (with its short cache) and the operator token."""

authenticator = AUTHENTICATOR.read
"""The authenticator, as a request dependency."""


async def _principal_of(request: Request) -> Principal:
    auth = AUTHENTICATOR.get(request.app)
    token = credential_from(request)
    if token is None:
        raise Unauthenticated("send an API key as 'Authorization: Bearer wm_…' or 'X-API-Key'")
    if auth.is_operator_token(token):
        raise Forbidden("the operator token cannot read or write tenant data")
    principal = await auth.principal(token)
    bind_tenant(principal.tenant_id)
    return principal


# Each dependency is one function of the request, not a chain of dependencies: resolving a
# dependency costs more than what these do.
async def current_principal(request: Request) -> Principal:
    return await _principal_of(request)


async def writer_principal(request: Request) -> Principal:
    principal = await _principal_of(request)
    if not principal.can_write:
        raise Forbidden("this API key is read-only")
    return principal


async def admin_principal(request: Request) -> Principal:
    """A tenant admin key not bound to a user: what managing the tenant's own settings
    (webhooks) takes. A key bound to a user sees only that user's data; the tenant's settings,
    and the deliveries that carry every user's events, are tenant-wide."""
    principal = await _principal_of(request)
    if principal.role != Role.ADMIN:
        raise Forbidden("this takes an admin API key")
    if principal.user_id is not None:
        raise Forbidden("a key bound to a user cannot manage the tenant's settings")
    return principal


async def require_operator(request: Request) -> None:
    auth = AUTHENTICATOR.get(request.app)
    if auth.settings.admin_token is None:
        raise Forbidden("the operator API is disabled: set WORKMEM_ADMIN_TOKEN")
    token = credential_from(request)
    if token is None or not auth.is_operator_token(token):
        raise Unauthenticated("the operator token is missing or wrong")


Reader = Annotated[Principal, Depends(current_principal)]
Writer = Annotated[Principal, Depends(writer_principal)]
Admin = Annotated[Principal, Depends(admin_principal)]
Operator = Annotated[None, Depends(require_operator)]
