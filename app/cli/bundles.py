"""``workmem export`` and ``workmem import workmem``: portable bundles of a tenant's data."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer

from app.cli.base import CliError, cli, echo_json, refuse_mismatched_embedder, run_db, runtime
from app.cli.importing import import_cli
from app.db import Database


@cli.command("export")
def export(
    out: Annotated[Path, typer.Argument(help="the bundle to write (.tar.zst)")],
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="the tenant to export")],
    user: Annotated[
        str | None, typer.Option("--user", help="only this user's agent sessions")
    ] = None,
    session: Annotated[
        uuid.UUID | None,
        typer.Option("--session", help="only this agent session (and its ancestors)"),
    ] = None,
) -> None:
    """Export a tenant, one user or one agent session to a portable bundle (a zstd-compressed tar
    of JSON lines with a checksummed manifest). Prints the manifest."""
    from rich.console import Console

    from app.bundles.console import BundleProgress
    from app.bundles.service import Scope, export_bundle

    if user is not None and session is not None:
        raise CliError("--user and --session choose the scope: give one of them, or neither")
    scope = Scope(tenant, user_id=user, session_id=session)

    async def work(database: Database) -> dict[str, Any]:
        with BundleProgress(Console(stderr=True), sys.stderr, "exporting") as progress:
            return await export_bundle(database, scope, out, progress)

    manifest = _run(work)
    echo_json(manifest)


@import_cli.command("workmem")
def import_workmem(
    bundle: Annotated[Path, typer.Argument(help="a bundle written by `workmem export`")],
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="the tenant to import into")],
    report: Annotated[Path | None, typer.Option(help="also write the summary as JSON here")] = None,
) -> None:
    """Import a workmem bundle: checked whole first, stored in one transaction; memories are
    embedded again by this service's embedder. Importing it again changes nothing."""
    from rich.console import Console

    from app.bundles.console import BundleProgress
    from app.bundles.service import ImportReport, import_bundle
    from app.usage.recorder import UsageRecorder
    from app.wiring import build_embedder, close_embedder

    resolved = runtime()
    refuse_mismatched_embedder(resolved.settings, resolved.url)

    async def work(database: Database) -> ImportReport:
        usage = UsageRecorder(database)
        embedder = build_embedder(resolved.settings, usage.record)
        try:
            with BundleProgress(Console(stderr=True), sys.stderr, "importing") as progress:
                return await import_bundle(database, bundle, tenant, embedder, progress)
        finally:
            await close_embedder(embedder)
            await usage.close()

    summary = _run(work, resolved.url)
    if report is not None:
        report.write_text(json.dumps(summary.as_json(), indent=2) + "\n")
    echo_json(summary.as_json())
    if not summary.changed:
        typer.echo(
            f"workmem: nothing changed: everything in {bundle} is already in tenant {tenant}",
            err=True,
        )


def _run(work: Any, url: str | None = None) -> Any:
    from app.bundles.files import BundleRefused
    from app.errors import AppError

    try:
        return run_db(work, url or runtime().url)
    except BundleRefused as error:
        raise CliError(str(error)) from None
    except AppError as error:
        raise CliError(error.detail) from None
    except OSError as error:
        raise CliError(f"cannot write the bundle: {error}") from None
