"""``workmem db``: migrations, run as the schema owner."""

from __future__ import annotations

from typing import Annotated

import typer

from app import migrations
from app.cli.base import (
    CliError,
    cli,
    run_db,
    runtime,
    upgrade_database,
)
from app.config import Settings
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


@db_cli.command("upgrade-cluster")
def db_upgrade_cluster() -> None:
    """Carry the embedded cluster in $WORKMEM_HOME/pgdata from an older PostgreSQL (16) to the
    bundled one: dump, restore beside it, check every table's rows, swap (the old directory is
    kept, renamed). Stop workmem first; reading PostgreSQL 16 needs
    `pip install 'workmem[pg16]'`."""
    from app.cluster_upgrade import UpgradeError, upgrade_cluster

    settings = Settings()
    if settings.database_url:
        raise CliError("DATABASE_URL is set: upgrade that server with its own tools")

    def say(line: str) -> None:
        typer.echo(f"workmem: {line}", err=True)

    try:
        kept = upgrade_cluster(settings.embedded_data_dir, say)
    except UpgradeError as error:
        raise CliError(
            f"upgrade stopped, {settings.embedded_data_dir} is unchanged: {error}"
        ) from None
    if kept is not None:
        say(f"done; remove {kept} once workmem serves your data")
