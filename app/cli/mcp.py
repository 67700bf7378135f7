"""``workmem mcp``: an alias of ``workmem-mcp``, the MCP server of the ``workmem-client``
distribution (installed with its ``mcp`` extra)."""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli.base import (
    cli,
    fail,
)


@cli.command("mcp")
def mcp_server(
    http: Annotated[
        bool, typer.Option("--http", help="serve streamable HTTP instead of stdio")
    ] = False,
    host: Annotated[str, typer.Option(help="bind address of --http")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="port of --http")] = 8765,
) -> None:
    """Serve workmem's tools and working memory to an MCP host, on stdio (or --http): the same
    as workmem-mcp. The deployment and key come from WORKMEM_URL and WORKMEM_API_KEY
    (WORKMEM_SESSION: a default agent session)."""
    try:
        from workmem_client.mcp.command import MissingApiKey, run
    except ModuleNotFoundError as error:
        raise fail(
            f"workmem mcp needs workmem-client with its mcp extra ({error.name} is missing): "
            "pip install './clients/python[mcp]' from a checkout of workmem"
        ) from None
    try:
        run(http=http, host=host, port=port)
    except MissingApiKey as error:
        raise fail(str(error)) from None
