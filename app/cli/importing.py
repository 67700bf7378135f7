"""``workmem import``: agent sessions from other stores."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Annotated

import typer

from app.cli.base import (
    cli,
    fail,
    run_db,
    runtime,
)
from app.config import Settings

import_cli = typer.Typer(help="Import agent sessions from other stores.", no_args_is_help=True)
cli.add_typer(import_cli, name="import")


@import_cli.command("openviking")
def import_openviking(
    directory: Annotated[
        Path, typer.Argument(help="the workspace directory (the one holding viking/)")
    ],
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="the tenant to import into")],
    account: Annotated[str | None, typer.Option(help="only this OpenViking account")] = None,
    user: Annotated[str | None, typer.Option(help="only this OpenViking user")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="read and validate everything, write nothing")
    ] = False,
    report: Annotated[
        Path | None, typer.Option(help="also write the summary and every problem as JSON here")
    ] = None,
) -> None:
    """Import an OpenViking workspace: one agent session per session folder, its messages,
    archives and working memory. Re-running imports only what is not there yet."""
    from rich.console import Console

    from app.errors import AppError
    from app.importer.openviking.console import ImportProgress, render_summary
    from app.importer.openviking.reader import NotAWorkspace, workspace_root
    from app.importer.openviking.run import ImportOptions, import_workspace
    from app.sessions.service import Limits

    try:
        workspace_root(directory)
    except NotAWorkspace as error:
        raise fail(str(error)) from None
    settings = Settings()
    limits = Limits(
        max_message_bytes=settings.max_message_bytes,
        max_batch_messages=settings.max_batch_messages,
        default_keep_recent_count=settings.default_keep_recent_count,
    )
    options = ImportOptions(directory, tenant, account=account, user=user, dry_run=dry_run)
    console = Console()
    try:
        url = runtime(settings).url
        with ImportProgress(console, sys.stdout) as progress:
            summary = run_db(
                lambda database: import_workspace(database, options, limits, progress), url
            )
    except AppError as error:
        raise fail(error.detail) from None
    except KeyboardInterrupt:
        raise fail(
            "interrupted; the sessions imported so far are kept, run again for the rest", 130
        ) from None
    render_summary(console, summary)
    if report is not None:
        report.write_text(json.dumps(summary.as_json(), indent=2, ensure_ascii=False) + "\n")
    if summary.failed:
        raise typer.Exit(code=1)
