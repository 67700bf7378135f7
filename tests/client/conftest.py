"""Fixtures for the client tests: the real app in this process, and typed clients over an ASGI
transport to it (one app per module; each test gets its own tenant)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
from asgi_lifespan import LifespanManager
from starlette.types import ASGIApp

from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.support.fake_openai import fake_openai
from workmem_client import AsyncWorkmemClient, RetryPolicy

__all__ = ["fake_openai"]

BASE_URL = "http://workmem.test"


@pytest.fixture(scope="module")
async def asgi_app(settings: Settings, database: Database) -> AsyncIterator[ASGIApp]:
    app = create_app(settings, database=database)
    async with LifespanManager(app) as manager:
        yield manager.app


@pytest.fixture
def workmem_for(asgi_app: ASGIApp) -> Callable[..., AsyncWorkmemClient]:
    """``workmem_for(key, app=…, retry=…, sleep=…)``: a client of the in-process app (or of
    ``app``, an ASGI app in front of it)."""

    def build(
        api_key: str,
        *,
        app: ASGIApp | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> AsyncWorkmemClient:
        return AsyncWorkmemClient(
            BASE_URL,
            api_key,
            transport=httpx.ASGITransport(app=app or asgi_app),
            retry=retry,
            sleep=sleep,
        )

    return build
