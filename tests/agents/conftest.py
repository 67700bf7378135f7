"""Fixtures for the Agents SDK session tests: the real app in this process and a typed client of
it, the local OpenAI-compatible server, and the SDK's tracing off (it would export to OpenAI)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from agents import set_tracing_disabled
from asgi_lifespan import LifespanManager
from starlette.types import ASGIApp

from app.client import AsyncWorkmemClient
from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.support.fake_openai import fake_openai

__all__ = ["fake_openai"]


@pytest.fixture(scope="module", autouse=True)
def no_tracing() -> None:
    set_tracing_disabled(True)


@pytest.fixture(scope="module")
async def asgi_app(settings: Settings, database: Database) -> AsyncIterator[ASGIApp]:
    app = create_app(settings, database=database)
    async with LifespanManager(app) as manager:
        yield manager.app


@pytest.fixture
def workmem_for(asgi_app: ASGIApp) -> Callable[[str], AsyncWorkmemClient]:
    def build(api_key: str) -> AsyncWorkmemClient:
        return AsyncWorkmemClient(
            "http://workmem.test", api_key, transport=httpx.ASGITransport(app=asgi_app)
        )

    return build
