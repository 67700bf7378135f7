"""``workmem-mcp --http``: the same tools over streamable HTTP, driven by the MCP SDK's own
streamable-HTTP client, against the real ``workmem serve``."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.helpers import TOOLS, mcp_command, structured
from tests.support.servers import free_port

pytestmark = pytest.mark.e2e


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"workmem-mcp --http exited with {process.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("workmem-mcp --http did not listen")


@pytest.fixture
def mcp_http(served: tuple[str, str], tmp_path: Path) -> Iterator[str]:
    url, key = served
    port = free_port()
    env = {**os.environ, "WORKMEM_URL": url, "WORKMEM_API_KEY": key}
    with (tmp_path / "mcp-http.log").open("wb") as log:
        process = subprocess.Popen(
            [*mcp_command(), "--http", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=log,
        )
        try:
            wait_for_port(port, process)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            process.wait(timeout=30)


async def test_tools_over_streamable_http(mcp_http: str) -> None:
    async with (
        streamable_http_client(mcp_http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
        appended = structured(
            await session.call_tool(
                "append_messages",
                {"session": "over-http", "messages": [{"role": "user", "content": "ping"}]},
            )
        )
        assert appended["seqs"] == [1]
