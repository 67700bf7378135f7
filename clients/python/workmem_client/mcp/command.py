"""Running ``workmem-mcp`` (also ``workmem mcp`` where the server is installed): the server on
stdio (what MCP hosts spawn), or on streamable HTTP (``--http``), with the deployment and key
from ``WORKMEM_URL`` and ``WORKMEM_API_KEY`` (``WORKMEM_SESSION``: a default agent session).

Owns the process: its settings, the typed client's lifetime, the transport and the log: plain
lines on stderr (``workmem mcp: …``, warnings and up: a failed tool is one line), so that on
stdio stdout carries the protocol alone.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

import anyio

from workmem_client.aio import AsyncWorkmemClient
from workmem_client.config import MissingApiKey, resolve
from workmem_client.mcp.server import build_server


def run(*, http: bool = False, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve until the host closes stdin (stdio) or the process is stopped (HTTP).

    Raises ``MissingApiKey`` before anything starts when no key is configured."""
    url, api_key = resolve(None, None)
    default_session = os.environ.get("WORKMEM_SESSION") or None
    logging.basicConfig(
        level=logging.WARNING, format="workmem mcp: %(message)s", stream=sys.stderr, force=True
    )

    async def main() -> None:
        async with AsyncWorkmemClient(url, api_key) as client:
            server = build_server(client, default_session=default_session)
            if http:
                sys.stderr.write(f"workmem mcp: streamable HTTP on http://{host}:{port}/mcp\n")
                await server.run_streamable_http_async(host=host, port=port)
            else:
                await server.run_stdio_async()

    anyio.run(main)


def main(argv: list[str] | None = None) -> None:
    """``workmem-mcp [--http] [--host H] [--port P]``."""
    parser = argparse.ArgumentParser(
        prog="workmem-mcp",
        description="Serve workmem's tools and working memory to an MCP host, on stdio (or "
        "--http). The deployment and key come from WORKMEM_URL and WORKMEM_API_KEY "
        "(WORKMEM_SESSION: a default agent session).",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1", help="bind address of --http")
    parser.add_argument("--port", type=int, default=8765, help="port of --http")
    arguments = parser.parse_args(argv)
    if not 1 <= arguments.port <= 65535:
        parser.error("--port must be from 1 to 65535")
    try:
        run(http=arguments.http, host=arguments.host, port=arguments.port)
    except MissingApiKey as error:
        sys.stderr.write(f"workmem-mcp: {error}\n")
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None


__all__ = ["MissingApiKey", "main", "run"]
