"""``workmem memories``: long-term memory maintenance."""

from __future__ import annotations

import sys
import uuid
from typing import Annotated

import typer

from app.cli.base import (
    cli,
    echo_json,
    refuse_mismatched_embedder,
    run_db,
    runtime,
)
from app.db import Database

memories_cli = typer.Typer(help="Long-term memory (operator).", no_args_is_help=True)
cli.add_typer(memories_cli, name="memories")


@memories_cli.command("reembed")
def memories_reembed(
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
    batch_size: Annotated[int, typer.Option(min=1, max=2048, help="memories per batch")] = 64,
) -> None:
    """Move a tenant's memories to the configured embedder (resumable: run it again to go on)."""
    from rich.console import Console

    from app.memories.embedding import EmbeddingError
    from app.memories.reembed import ReembedReport, reembed
    from app.progress import ProgressDisplay
    from app.usage.recorder import UsageRecorder
    from app.wiring import build_embedder, close_embedder

    resolved = runtime()
    refuse_mismatched_embedder(resolved.settings, resolved.url)

    async def work(database: Database) -> ReembedReport:
        # What each embedding call cost: written before the command ends.
        usage = UsageRecorder(database)
        embedder = build_embedder(resolved.settings, usage.record)
        try:
            # On standard error: standard output carries the result as JSON.
            with ProgressDisplay(Console(stderr=True), "re-embedding", unit="memories") as shown:
                return await reembed(
                    database,
                    embedder,
                    tenant,
                    batch_size=batch_size,
                    started=shown.begin,
                    advanced=shown.advance,
                )
        finally:
            await close_embedder(embedder)
            await usage.close()

    try:
        report = run_db(work, resolved.url)
    except EmbeddingError as error:
        print(
            f"workmem: re-embedding stopped: {error}; run the command again to go on",
            file=sys.stderr,
        )
        raise typer.Exit(code=1) from None
    echo_json(
        {
            "tenant_id": str(report.tenant_id),
            "embedding_model": report.embedding_model,
            "stale": report.stale,
            "reembedded": report.reembedded,
            "changed_meanwhile": report.changed_meanwhile,
        }
    )
