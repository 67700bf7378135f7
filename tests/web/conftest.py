"""One real ``workmem serve`` process (embedded database, free port) per module of these tests,
and its local key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.servers import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("web") / "home")
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    return (server.home / "local-api-key").read_text().strip()
