"""What every ``workmem`` command shares: the root command, where the database is (embedded
Postgres or ``DATABASE_URL``), running a step on it, and one-line errors.

Owns turning configuration into a connection; holds no feature logic.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import stat
import sys
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import typer
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from app import migrations
from app.config import Settings
from app.db import SERVICE_KEY_VARIABLE, Bounds, Database, login_url
from app.embedded import EmbeddedPostgres, start_embedded
from app.errors import Unavailable
from app.tenancy import service as tenancy
from app.tenancy.principal import Role

T = TypeVar("T")

cli = typer.Typer(
    help="workmem: working memory for long AI agent sessions, on Postgres.",
    no_args_is_help=True,
    add_completion=False,
)


@dataclass(slots=True)
class Runtime:
    """Where the database is: ``url`` is the service's own login (``workmem_app``);
    ``admin_url`` the schema owner's, for migrations only (``None`` when not configured)."""

    settings: Settings
    url: str
    admin_url: str | None
    embedded: EmbeddedPostgres | None

    def migration_url(self) -> str:
        if self.admin_url is None:
            raise CliError(
                "migrations need the schema owner's connection: set WORKMEM_ADMIN_DATABASE_URL"
            )
        return self.admin_url


class CliError(Exception):
    """A problem the user can fix; printed as one line, exit status 1."""


def runtime(settings: Settings | None = None, *, migrate: bool = True) -> Runtime:
    """Resolve the database: ``DATABASE_URL`` if set, else the embedded cluster under home.

    The embedded cluster trusts local logins, so its owner (``postgres``) runs the migrations
    and the service logs in as ``workmem_app`` on the same socket.
    """
    settings = settings or Settings()
    if settings.database_url:
        return Runtime(settings, settings.database_url, settings.admin_database_url, None)
    local_service_key(settings)
    embedded = start_embedded(settings.embedded_data_dir)
    admin = embedded.url()
    # The embedded database is the service's own: every command finds it migrated (a no-op at
    # head), so `workmem tenants create` works before the first `workmem serve`. serve migrates
    # by itself; a worker never does (it may start beside serve, and two upgrades must not race).
    if migrate:
        migrations.upgrade(admin)
    url = login_url(admin)
    return Runtime(settings.model_copy(update={"database_url": url}), url, admin, embedded)


def local_service_key(settings: Settings) -> None:
    """The embedded database's service key: configured, else kept beside its data (created
    once, readable by its owner only). Set in the environment, so that every connection of this
    process and of the processes it starts carries it."""
    if settings.service_key is not None or os.environ.get(SERVICE_KEY_VARIABLE):
        if settings.service_key is not None:
            os.environ[SERVICE_KEY_VARIABLE] = settings.service_key.get_secret_value()
        return
    path = settings.home / "service.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_urlsafe(32))
    os.environ[SERVICE_KEY_VARIABLE] = path.read_text().strip()


def run_db(work: Callable[[Database], Awaitable[T]], url: str) -> T:
    # Operator commands: a connection within seconds, but no bound on a statement (an import
    # of a long session, a recomputation over a large tenant may rightly run long).
    bounds = Bounds(connect_s=5.0, statement_s=None)

    async def main() -> T:
        database = Database.from_url(url, pool_size=2, bounds=bounds)
        try:
            return await work(database)
        finally:
            await database.dispose()

    try:
        return asyncio.run(_as_coroutine(main))
    except Unavailable as error:
        raise CliError(unreachable_database(url, error)) from None


def unreachable_database(url: str, error: BaseException) -> str:
    """One line: which database (never its password), what the driver said, what to do."""
    cause: BaseException = error
    while cause.__cause__ is not None or cause.__context__ is not None:
        cause = cause.__cause__ or cause.__context__  # type: ignore[assignment]
    said = str(getattr(cause, "orig", None) or cause).strip()
    said = said.splitlines()[0] if said else type(cause).__name__
    try:
        where = make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        where = "of DATABASE_URL"
    return (
        f"cannot reach the database {where}: {said}; check DATABASE_URL (or "
        "WORKMEM_ADMIN_DATABASE_URL) and that Postgres is running there"
    )


async def _as_coroutine(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return await factory()


def echo_json(value: object) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def fail(message: str, code: int = 2) -> typer.Exit:
    """A one-line error on stderr (never a traceback), as an exit to raise."""
    typer.echo(f"workmem: {message}", err=True)
    return typer.Exit(code=code)


def run_operator(work: Callable[[Database], Awaitable[T]], url: str) -> T:
    """Run an operator step; an application error is one line on stderr and exit status 1."""
    from app.errors import AppError

    try:
        return run_db(work, url)
    except AppError as error:
        typer.echo(f"workmem: {error.detail}", err=True)
        raise typer.Exit(code=1) from None


def upgrade_database(resolved: Runtime, revision: str = "head") -> None:
    """Migrate as the schema owner; then give workmem_app its password, when one is set."""
    admin_url = resolved.migration_url()
    migrations.upgrade(admin_url, revision)
    password = resolved.settings.app_db_password
    if password is not None:
        migrations.set_login_password(admin_url, password.get_secret_value())


async def ensure_local_key(database: Database, existing: str | None) -> str:
    """On an embedded database: the existing local key if still valid, else a new tenant + key."""
    if existing:
        async with database.unscoped() as db:
            if await tenancy.verify_key(db, existing) is not None:
                return existing
    async with database.unscoped() as db:
        tenant = await tenancy.create_tenant(db, "local")
        _, plaintext = await tenancy.issue_key(db, tenant.tenant_id, role=Role.ADMIN, name="local")
    return plaintext


def write_local_key(url: str, key_file: Path) -> None:
    existing = key_file.read_text().strip() if key_file.is_file() else None
    key = run_db(lambda database: ensure_local_key(database, existing), url)
    if key != existing:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(key + "\n")
        key_file.chmod(stat.S_IRUSR | stat.S_IWUSR)


def refuse_mismatched_embedder(settings: Settings, url: str) -> None:
    """Exit with one line when the configured embedder's dimension is not the column's."""
    from app.wiring import EmbedderMismatch, build_embedder, check_embedder, close_embedder

    async def work(database: Database) -> None:
        embedder = build_embedder(settings)
        try:
            await check_embedder(database, embedder)
        finally:
            await close_embedder(embedder)

    try:
        run_db(work, url)
    except EmbedderMismatch as error:
        print(f"workmem: {error}", file=sys.stderr)
        raise typer.Exit(code=2) from None
