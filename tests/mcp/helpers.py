"""Helpers of the MCP tests: a stdio session of the MCP SDK's own client with ``workmem-mcp``,
and reading tool results."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from tests.support.servers import workmem_command

TOOLS = {
    "get_context",
    "append_messages",
    "commit",
    "read_archive",
    "search_history",
    "search_memories",
    "pin",
}


def mcp_command() -> list[str]:
    """``workmem-mcp``, the console script of the client distribution."""
    script = Path(sys.executable).parent / "workmem-mcp"
    return [str(script)] if script.exists() else [sys.executable, "-m", "workmem_client.mcp"]


@asynccontextmanager
async def mcp_session(
    url: str, key: str, *, errlog: TextIO | None = None, alias: bool = False, **env: str
) -> AsyncIterator[ClientSession]:
    """A session with ``workmem-mcp`` (``alias``: ``workmem mcp``, the server's alias of it);
    its stderr goes to ``errlog`` (default: nowhere)."""
    command, *args = [*workmem_command(), "mcp"] if alias else mcp_command()
    parameters = StdioServerParameters(
        command=command,
        args=args,
        env={"WORKMEM_URL": url, "WORKMEM_API_KEY": key, "PATH": os.environ["PATH"], **env},
    )
    with Path(os.devnull).open("w") as quiet:  # noqa: ASYNC230 - /dev/null never blocks
        async with (
            stdio_client(parameters, errlog=errlog or quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return dict(result.structured_content)
