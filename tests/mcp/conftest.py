"""The real ``workmem serve`` the MCP tests talk to: one for the package, its URL and key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.servers import Server


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    home = tmp_path_factory.mktemp("mcp") / "home"
    server = Server(home)
    try:
        server.wait_ready()
        yield server.base_url, (home / "local-api-key").read_text().strip()
    finally:
        server.stop()
