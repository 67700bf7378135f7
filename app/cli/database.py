"""``workmem db``: migrations, run as the schema owner."""

from __future__ import annotations

from typing import Annotated

import typer

from app import migrations
from app.cli.base import (
    cli,
    run_db,
    runtime,
    upgrade_database,
)
from app.db import Database
from app.tenancy import service as tenancy

db_cli = typer.Typer(help="Database migrations.", no_args_is_help=True)
cli.add_typer(db_cli, name="db")


@db_cli.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument()] = "head") -> None:
    """Migrate the database up to REVISION (default: head), as the schema owner."""
    upgrade_database(runtime(), revision)


@db_cli.command("downgrade")
def db_downgrade(revision: Annotated[str, typer.Argument(help="target, e.g. -1 or base")]) -> None:
    """Migrate the database down to REVISION, as the schema owner."""
    migrations.downgrade(runtime().migration_url(), revision)


@db_cli.command("current")
def db_current() -> None:
    """Print the database's current revision."""
    resolved = runtime()
    if resolved.admin_url is not None:
        typer.echo(migrations.current_revision(resolved.admin_url) or "no revision applied")
        return

    async def work(database: Database) -> str | None:
        async with database.unscoped() as db:
            return await tenancy.schema_revision(db)

    typer.echo(run_db(work, resolved.url) or "no revision applied")
