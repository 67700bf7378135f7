"""Running ``workmem mcp``: the server on stdio (what MCP hosts spawn), or on streamable HTTP
(``--http``), with the deployment and key from ``WORKMEM_URL`` and ``WORKMEM_API_KEY``.

Owns the process: its settings, the typed client's lifetime, the transport and the log: plain
lines on stderr (``workmem mcp: …``, warnings and up: a failed tool is one line), so that on
stdio stdout carries the protocol alone.
"""

from __future__ import annotations

import logging
import sys

import anyio
from pydantic import Field

from app.client import AsyncWorkmemClient
from app.client.config import ClientSettings, MissingApiKey, resolve
from app.mcp.server import build_server


class McpSettings(ClientSettings):
    session: str | None = Field(
        default=None, description="the agent session tools use when they name none"
    )


def run(*, http: bool = False, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve until the host closes stdin (stdio) or the process is stopped (HTTP).

    Raises ``MissingApiKey`` before anything starts when no key is configured."""
    settings = McpSettings()
    key = None if settings.api_key is None else settings.api_key.get_secret_value()
    url, api_key = resolve(settings.url, key)
    logging.basicConfig(
        level=logging.WARNING, format="workmem mcp: %(message)s", stream=sys.stderr, force=True
    )

    async def main() -> None:
        async with AsyncWorkmemClient(url, api_key) as client:
            server = build_server(client, default_session=settings.session)
            if http:
                sys.stderr.write(f"workmem mcp: streamable HTTP on http://{host}:{port}/mcp\n")
                await server.run_streamable_http_async(host=host, port=port)
            else:
                await server.run_stdio_async()

    anyio.run(main)


__all__ = ["MissingApiKey", "run"]
