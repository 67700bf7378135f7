"""Repeats over real HTTP exchanges: a front answers the first requests 429 or 503 (as a rate
limiter or a proxy would), then lets them through to the real app."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.conftest import TenantKeys
from workmem_client import (
    AsyncWorkmemClient,
    RateLimitedError,
    RetryPolicy,
    UnavailableError,
    WorkmemError,
)

Factory = Callable[..., AsyncWorkmemClient]


@dataclass
class Refusing:
    """Answers the first ``times`` requests with ``status`` (and ``Retry-After`` when set)."""

    app: ASGIApp
    status: int
    times: int
    retry_after: str | None = None
    seen: list[str] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.seen.append(f"{scope['method']} {scope['path']}")
        if len(self.seen) > self.times:
            await self.app(scope, receive, send)
            return
        headers = [(b"content-type", b"application/problem+json")]
        if self.retry_after is not None:
            headers.append((b"retry-after", self.retry_after.encode()))
        body = b'{"type": "rate_limited", "title": "Slow down", "status": 429, "detail": "later"}'
        if self.status == 503:
            body = b'{"type": "unavailable", "title": "Unavailable", "status": 503, "detail": "x"}'
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class Sleeps:
    def __init__(self) -> None:
        self.waited: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waited.append(seconds)


@pytest.mark.parametrize("status", [429, 503])
async def test_a_refusal_with_retry_after_is_repeated_until_it_passes(
    workmem_for: Factory, asgi_app: ASGIApp, tenant: TenantKeys, status: int
) -> None:
    front = Refusing(asgi_app, status, times=2, retry_after="3")
    sleeps = Sleeps()
    async with workmem_for(tenant.writer, app=front, sleep=sleeps) as workmem:
        created = await workmem.create_session(external_id=f"repeated-{status}")
    assert created.external_id == f"repeated-{status}"
    assert front.seen == ["POST /v1/sessions"] * 3
    assert sleeps.waited == [3.0, 3.0]


async def test_repeats_stop_at_max_retries(
    workmem_for: Factory, asgi_app: ASGIApp, tenant: TenantKeys
) -> None:
    front = Refusing(asgi_app, 429, times=10, retry_after="1")
    sleeps = Sleeps()
    policy = RetryPolicy(max_retries=2)
    async with workmem_for(tenant.writer, app=front, sleep=sleeps, retry=policy) as workmem:
        with pytest.raises(RateLimitedError) as raised:
            await workmem.list_sessions()
    assert raised.value.type == "rate_limited"
    assert raised.value.retry_after == "1"
    assert len(front.seen) == 3
    assert sleeps.waited == [1.0, 1.0]


@pytest.mark.parametrize(
    ("status", "retry_after", "error"),
    [
        (503, None, UnavailableError),  # the server did not say when: not repeated
        (429, "600", RateLimitedError),  # longer than max_wait_s: raised at once
    ],
)
async def test_no_repeat_without_a_usable_retry_after(
    workmem_for: Factory,
    asgi_app: ASGIApp,
    tenant: TenantKeys,
    status: int,
    retry_after: str | None,
    error: type[WorkmemError],
) -> None:
    front = Refusing(asgi_app, status, times=1, retry_after=retry_after)
    sleeps = Sleeps()
    async with workmem_for(tenant.writer, app=front, sleep=sleeps) as workmem:
        with pytest.raises(error):
            await workmem.create_session()
    assert len(front.seen) == 1
    assert sleeps.waited == []
