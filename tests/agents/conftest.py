"""Fixtures for the Agents SDK session tests: one real ``workmem serve`` for the package and a
typed client of it, a fresh session name per test, the local OpenAI-compatible server, and the
SDK's tracing off (it would export to OpenAI)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from agents import set_tracing_disabled

from tests.support.fake_openai import fake_openai
from tests.support.servers import Server
from workmem_client import WorkmemClient

__all__ = ["fake_openai"]


@pytest.fixture(scope="package", autouse=True)
def no_tracing() -> None:
    set_tracing_disabled(True)


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The URL and key of a real ``workmem serve`` (an embedded database, offline extractor)."""
    home = tmp_path_factory.mktemp("agents") / "home"
    server = Server(home)
    try:
        server.wait_ready()
        yield server.base_url, (home / "local-api-key").read_text().strip()
    finally:
        server.stop()


@pytest.fixture
def workmem(served: tuple[str, str]) -> Iterator[WorkmemClient]:
    url, key = served
    with WorkmemClient(url, key, timeout_s=60) as client:
        yield client


@pytest.fixture
def name() -> str:
    """A session name no other test uses (the server is shared by the package)."""
    return f"conv-{uuid.uuid4().hex[:12]}"
