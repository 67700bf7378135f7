"""The ``workmem`` command: serve, workers, migrations, tenants and keys, maintenance, debugging.

Owns turning configuration into a running process (embedded Postgres or ``DATABASE_URL``).
Holds no feature logic: every command calls a service inside a transaction it opens.
"""

from __future__ import annotations

import asyncio
import json
import signal
import stat
import sys
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from app import migrations
from app.config import Settings
from app.db import Bounds, Database, PrivilegedLogin, login_url
from app.embedded import EmbeddedPostgres, start_embedded
from app.observability import configure_logging
from app.tenancy import service as tenancy
from app.tenancy.principal import Role

T = TypeVar("T")

cli = typer.Typer(
    help="workmem: working memory for long AI agent sessions, on Postgres.",
    no_args_is_help=True,
    add_completion=False,
)
db_cli = typer.Typer(help="Database migrations.", no_args_is_help=True)
tenants_cli = typer.Typer(help="Tenants (operator).", no_args_is_help=True)
keys_cli = typer.Typer(help="API keys (operator).", no_args_is_help=True)
pending_cli = typer.Typer(help="The pending_tokens counter.", no_args_is_help=True)
archives_cli = typer.Typer(help="Archives (operator).", no_args_is_help=True)
wm_cli = typer.Typer(
    help="The pure working-memory rules, for debugging guards.", no_args_is_help=True
)
cli.add_typer(db_cli, name="db")
cli.add_typer(tenants_cli, name="tenants")
cli.add_typer(keys_cli, name="keys")
cli.add_typer(pending_cli, name="pending-tokens")
cli.add_typer(archives_cli, name="archives")
cli.add_typer(wm_cli, name="wm")
import_cli = typer.Typer(help="Import agent sessions from other stores.", no_args_is_help=True)
cli.add_typer(import_cli, name="import")


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
    embedded = start_embedded(settings.embedded_data_dir)
    admin = embedded.url()
    # The embedded database is the service's own: every command finds it migrated (a no-op at
    # head), so `workmem tenants create` works before the first `workmem serve`. serve migrates
    # by itself; a worker never does (it may start beside serve, and two upgrades must not race).
    if migrate:
        migrations.upgrade(admin)
    url = login_url(admin)
    return Runtime(settings.model_copy(update={"database_url": url}), url, admin, embedded)


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

    return asyncio.run(_as_coroutine(main))


async def _as_coroutine(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return await factory()


def echo_json(value: object) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


# --- serve -------------------------------------------------------------------------------------


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


@cli.command()
def serve(
    host: Annotated[str | None, typer.Option(help="bind address [WORKMEM_HOST]")] = None,
    port: Annotated[int | None, typer.Option(help="port [WORKMEM_PORT]")] = None,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="server processes (one runs the archive worker)")
    ] = 1,
    migrate: Annotated[
        bool, typer.Option(help="run migrations at start (always on for the embedded database)")
    ] = False,
) -> None:
    """Run the HTTP API (embedded Postgres unless DATABASE_URL is set)."""
    from app.main import create_app
    from app.serving import serve as run_server

    base = Settings()
    overrides: dict[str, Any] = {}
    if host is not None:
        overrides["host"] = host
    if port is not None:
        overrides["port"] = port
    settings = base.model_copy(update=overrides)
    configure_logging(settings.log_level, as_json=settings.log_json)
    resolved = runtime(settings, migrate=False)
    if resolved.embedded is not None or migrate:
        upgrade_database(resolved)
    run_db(lambda database: database.check_login(), resolved.url)
    refuse_mismatched_embedder(resolved.settings, resolved.url)
    if resolved.embedded is not None:
        key_file = resolved.settings.key_file
        write_local_key(resolved.url, key_file)
        print(f"workmem: embedded Postgres in {resolved.settings.embedded_data_dir}", flush=True)
        print(f"workmem: API key for the local tenant is in {key_file}", flush=True)
    run_server(
        resolved.settings, workers=workers, embedded=resolved.embedded, app_factory=create_app
    )


@cli.command()
def worker(
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="archives processed at once")] = 1,
) -> None:
    """Process archives (phase 2) until SIGTERM/SIGINT; run as many processes as you like."""
    from app.archives.worker import ArchiveWorker
    from app.main import (
        build_deliverer,
        build_embedder,
        build_generator,
        build_memory_extractor,
        build_worker,
        close_embedder,
    )

    settings = Settings()
    configure_logging(settings.log_level, as_json=settings.log_json)
    resolved = runtime(settings, migrate=False)
    refuse_mismatched_embedder(resolved.settings, resolved.url)

    async def main() -> None:
        database = Database.from_url(
            resolved.url,
            pool_size=max(2, concurrency + 1),
            bounds=Bounds.from_settings(resolved.settings),
        )
        await database.check_login()
        generator = build_generator(resolved.settings)
        embedder = build_embedder(resolved.settings)
        memories = build_memory_extractor(resolved.settings, generator, embedder)
        workers: list[ArchiveWorker] = [
            build_worker(resolved.settings, database, generator, memories)
            for _ in range(concurrency)
        ]
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        print(f"workmem: {concurrency} worker(s) started", flush=True)
        # Webhook deliveries: one loop per worker process, beside the archive workers.
        deliverer = (
            build_deliverer(resolved.settings, database)
            if resolved.settings.webhooks_delivery
            else None
        )
        loops = [worker.run(stop) for worker in workers]
        if deliverer is not None:
            loops.append(deliverer.run(stop))
        try:
            await asyncio.gather(*loops)
        finally:
            if deliverer is not None:
                await deliverer.close()
            await close_embedder(embedder)
            await database.dispose()

    try:
        asyncio.run(main())
    finally:
        if resolved.embedded is not None:
            resolved.embedded.stop()


# --- db ----------------------------------------------------------------------------------------


def upgrade_database(resolved: Runtime, revision: str = "head") -> None:
    """Migrate as the schema owner; then give workmem_app its password, when one is set."""
    admin_url = resolved.migration_url()
    migrations.upgrade(admin_url, revision)
    password = resolved.settings.app_db_password
    if password is not None:
        migrations.set_login_password(admin_url, password.get_secret_value())


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


# --- tenants and keys --------------------------------------------------------------------------


@tenants_cli.command("create")
def tenants_create(name: Annotated[str, typer.Argument(help="display name")]) -> None:
    """Create a tenant and print it as JSON."""

    async def work(database: Database) -> dict[str, str]:
        async with database.unscoped() as db:
            tenant = await tenancy.create_tenant(db, name)
            return {"tenant_id": str(tenant.tenant_id), "name": tenant.name}

    echo_json(run_db(work, runtime().url))


@keys_cli.command("create")
def keys_create(
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
    role: Annotated[Role, typer.Option(help="admin, writer or reader")] = Role.WRITER,
    name: Annotated[str | None, typer.Option(help="a label for the key")] = None,
    user_id: Annotated[str | None, typer.Option(help="restrict the key to one user_id")] = None,
) -> None:
    """Issue an API key; the key is printed once and only its hash is stored."""

    async def work(database: Database) -> dict[str, str | None]:
        async with database.unscoped() as db:
            row, plaintext = await tenancy.issue_key(
                db, tenant, role=role, name=name, user_id=user_id
            )
            return {
                "api_key_id": str(row.api_key_id),
                "key": plaintext,
                "role": row.role,
                "user_id": row.user_id,
            }

    echo_json(run_db(work, runtime().url))


@keys_cli.command("revoke")
def keys_revoke(api_key_id: Annotated[uuid.UUID, typer.Argument(help="the key's id")]) -> None:
    """Revoke an API key (requests with it answer 401 within seconds)."""

    async def work(database: Database) -> dict[str, str]:
        async with database.unscoped() as db:
            row = await tenancy.revoke_key(db, api_key_id)
            return {"api_key_id": str(row.api_key_id), "revoked_at": str(row.revoked_at)}

    echo_json(run_db(work, runtime().url))


# --- maintenance -------------------------------------------------------------------------------


@pending_cli.command("check")
def pending_tokens_check(
    repair: Annotated[
        bool, typer.Option(help="write the recomputed value where it drifted")
    ] = False,
) -> None:
    """Recompute pending_tokens of every agent session from its messages and report drift."""
    from app.sessions.maintenance import check_all_pending

    report = run_db(lambda database: check_all_pending(database, repair=repair), runtime().url)
    echo_json(report)
    if report["drifted"] and not repair:
        raise typer.Exit(code=1)


@archives_cli.command("retry")
def archives_retry(
    tenant: Annotated[uuid.UUID | None, typer.Option(help="only this tenant")] = None,
    agent_session: Annotated[uuid.UUID | None, typer.Option(help="only this agent session")] = None,
    archive_seq: Annotated[int | None, typer.Option(help="only this archive")] = None,
) -> None:
    """Re-queue failed archives (all of them, or those matching the filters)."""
    from app.archives.repository import requeue_failed

    async def work(database: Database) -> list[dict[str, object]]:
        async with database.unscoped() as db:
            return await requeue_failed(
                db, tenant_id=tenant, agent_session_id=agent_session, archive_seq=archive_seq
            )

    requeued = run_db(work, runtime().url)
    echo_json({"requeued": requeued})


# --- wm ----------------------------------------------------------------------------------------


def read_input(path: Path | None) -> str:
    """A file's text; ``-`` reads standard input; no path is the empty document."""
    if path is None:
        return ""
    if str(path) == "-":
        return sys.stdin.read()
    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file")
    return path.read_text(encoding="utf-8")


@wm_cli.command("merge")
def wm_merge(
    ops: Annotated[
        Path, typer.Option(help="ops as JSON, or a raw tool-argument string (recovered); - = stdin")
    ],
    prior: Annotated[Path | None, typer.Option(help="prior WM Markdown; - = stdin")] = None,
) -> None:
    """Merge OPS into PRIOR under the guards; print {markdown, sections, decisions} as JSON."""
    from app.wm.debug import merge_report

    if prior is not None and str(prior) == str(ops) == "-":
        raise typer.BadParameter("only one of --prior and --ops can read standard input")
    echo_json(merge_report(read_input(prior), read_input(ops)))


@wm_cli.command("extract")
def wm_extract(
    messages: Annotated[Path, typer.Option(help="a JSON list of OpenAI-format messages")],
    prior: Annotated[Path | None, typer.Option(help="prior WM Markdown")] = None,
) -> None:
    """Print the offline extractor's ops for MESSAGES (and what merging them gives)."""
    from app.wm.debug import extract_report

    try:
        loaded = json.loads(read_input(messages))
    except ValueError as error:
        raise typer.BadParameter(f"{messages} is not JSON: {error}") from error
    if isinstance(loaded, dict) and isinstance(loaded.get("messages"), list):
        loaded = loaded["messages"]
    if not isinstance(loaded, list) or not all(isinstance(item, dict) for item in loaded):
        raise typer.BadParameter("--messages must hold a JSON list of message objects")
    echo_json(extract_report(loaded, read_input(prior)))


# --- auditors ----------------------------------------------------------------------------------

auditors_cli = typer.Typer(
    help="Database logins that read one tenant's audit views (operator; they are roles, so "
    "these commands use the schema owner's connection, WORKMEM_ADMIN_DATABASE_URL).",
    no_args_is_help=True,
)
cli.add_typer(auditors_cli, name="auditors")


def run_operator(work: Callable[[Database], Awaitable[T]], url: str) -> T:
    """Run an operator step; an application error is one line on stderr and exit status 1."""
    from app.errors import AppError

    try:
        return run_db(work, url)
    except AppError as error:
        typer.echo(f"workmem: {error.detail}", err=True)
        raise typer.Exit(code=1) from None


@auditors_cli.command("create")
def auditors_create(
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
    name: Annotated[
        str | None, typer.Option(help="login name (default: wm_auditor_<random>)")
    ] = None,
) -> None:
    """Create a read-only login for TENANT's audit views; print its connection string once."""
    from app.audit import auditors

    resolved = runtime()

    async def work(database: Database) -> dict[str, str]:
        async with database.unscoped() as db:
            login = await auditors.create(
                db, database_url=resolved.url, tenant_id=tenant, login_role=name
            )
        return {
            "login_role": login.login_role,
            "tenant_id": str(login.tenant_id),
            "connection_url": login.connection_url,
        }

    echo_json(run_operator(work, resolved.migration_url()))


@auditors_cli.command("list")
def auditors_list(
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
) -> None:
    """List the auditor logins of TENANT."""
    from app.audit import auditors

    async def work(database: Database) -> list[str]:
        async with database.unscoped() as db:
            return await auditors.listed(db, tenant)

    listed = run_operator(work, runtime().migration_url())
    echo_json({"tenant_id": str(tenant), "login_roles": listed})


@auditors_cli.command("drop")
def auditors_drop(
    login_role: Annotated[str, typer.Argument(help="the login to drop")],
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
) -> None:
    """Drop an auditor login of TENANT (its open connections keep working until they close)."""
    from app.audit import auditors

    async def work(database: Database) -> None:
        async with database.unscoped() as db:
            await auditors.drop(db, tenant_id=tenant, login_role=login_role)

    run_operator(work, runtime().migration_url())
    echo_json({"dropped": login_role})


# --- import ------------------------------------------------------------------------------------


def fail(message: str, code: int = 2) -> typer.Exit:
    """A one-line error on stderr (never a traceback), as an exit to raise."""
    typer.echo(f"workmem: {message}", err=True)
    return typer.Exit(code=code)


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


# --- memories ----------------------------------------------------------------------------------

memories_cli = typer.Typer(help="Long-term memory (operator).", no_args_is_help=True)
cli.add_typer(memories_cli, name="memories")


def refuse_mismatched_embedder(settings: Settings, url: str) -> None:
    """Exit with one line when the configured embedder's dimension is not the column's."""
    from app.main import EmbedderMismatch, build_embedder, check_embedder, close_embedder

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


@memories_cli.command("reembed")
def memories_reembed(
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
    batch_size: Annotated[int, typer.Option(min=1, max=2048, help="memories per batch")] = 64,
) -> None:
    """Move a tenant's memories to the configured embedder (resumable: run it again to go on)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from app.main import build_embedder, close_embedder
    from app.memories.embedding import EmbeddingError
    from app.memories.reembed import ReembedReport, reembed

    resolved = runtime()
    refuse_mismatched_embedder(resolved.settings, resolved.url)
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        transient=True,
    )
    task = progress.add_task("re-embedding", total=None)

    async def work(database: Database) -> ReembedReport:
        embedder = build_embedder(resolved.settings)
        try:
            with progress:
                return await reembed(
                    database,
                    embedder,
                    tenant,
                    batch_size=batch_size,
                    started=lambda total: progress.update(task, total=total),
                    advanced=lambda count: progress.advance(task, count),
                )
        finally:
            await close_embedder(embedder)

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


# --- replay and evaluation ---------------------------------------------------------------------


def _replay_client(url: str | None, key: str | None) -> Any:
    """A factory of the HTTP client a replay talks to: ``--url`` and ``--key`` for a running
    server; otherwise the service in this process on the configured database (the embedded one
    by default, with its local key)."""
    from app.replay.target import ServiceTarget, in_process, remote

    if url is not None:
        if key is None:
            raise fail("--url needs --key: an API key of the tenant to replay into")
        return lambda: remote(ServiceTarget(url, key))
    resolved = runtime()
    if resolved.embedded is not None:
        upgrade_database(resolved)
        write_local_key(resolved.url, resolved.settings.key_file)
        key = key or resolved.settings.key_file.read_text().strip()
    elif key is None:
        raise fail("with DATABASE_URL set, --key names the tenant to replay into")
    local_key = key
    return lambda: in_process(resolved.settings, local_key)


@cli.command("replay")
def replay_command(
    file: Annotated[Path, typer.Argument(help="a conversation file (JSON or JSON lines)")],
    format: Annotated[
        str | None,
        typer.Option(
            "--format", help="openai, locomo, swe-agent or tau-bench (default: from the content)"
        ),
    ] = None,
    every: Annotated[int, typer.Option(min=1, help="commit after this many messages")] = 40,
    pending_tokens: Annotated[
        int | None, typer.Option(min=1, help="also commit once pending_tokens reaches this")
    ] = None,
    keep: Annotated[int, typer.Option(min=0, max=10_000, help="keep_recent_count")] = 10,
    only: Annotated[
        int | None, typer.Option(min=1, help="replay only the Nth conversation of the file")
    ] = None,
    chain: Annotated[
        bool, typer.Option(help="replay all conversations of the file as one agent session")
    ] = False,
    external_id: Annotated[
        str | None, typer.Option(help="external_id of the agent session")
    ] = None,
    url: Annotated[
        str | None, typer.Option(help="a running server instead of this process")
    ] = None,
    key: Annotated[str | None, typer.Option(help="API key (writer) for --url")] = None,
) -> None:
    """Feed a conversation through the service, committing every N messages (or at a
    pending_tokens threshold), then print the working memory and each archive's guard
    decisions."""
    from rich.console import Console

    from app.replay.commands import CommandFailed, ReplayRequest, conversations_of, run_replay
    from app.replay.run import Schedule

    request = ReplayRequest(
        file,
        format,
        Schedule(every=every, pending_tokens=pending_tokens, keep=keep),
        only=only,
        chain=chain,
        external_id=external_id,
    )
    try:
        conversations_of(request)  # a bad file fails before the database starts
        run_replay(request, _replay_client(url, key), Console())
    except CommandFailed as error:
        raise fail(error.message, error.code) from None


@cli.command("eval")
def eval_command(
    datasets: Annotated[
        Path | None, typer.Option(help="the datasets folder (default: ../shared/datasets)")
    ] = None,
    sets: Annotated[
        str | None, typer.Option(help="comma-separated: locomo, tau-bench, swe-agent (default all)")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="evaluate only the first N conversations of each set")
    ] = None,
    every: Annotated[int, typer.Option(min=1, help="commit after this many messages")] = 40,
    pending_tokens: Annotated[
        int | None, typer.Option(min=1, help="also commit once pending_tokens reaches this")
    ] = None,
    keep: Annotated[int, typer.Option(min=0, max=10_000, help="keep_recent_count")] = 10,
    budgets: Annotated[str, typer.Option(help="comma-separated token budgets")] = "2000,4000,8000",
    json_out: Annotated[Path | None, typer.Option("--json", help="write the JSON here")] = None,
    markdown_out: Annotated[
        Path | None, typer.Option("--markdown", help="write the Markdown tables here")
    ] = None,
    url: Annotated[
        str | None, typer.Option(help="evaluate a running server (default: a throwaway database)")
    ] = None,
    key: Annotated[str | None, typer.Option(help="API key (writer) for --url")] = None,
) -> None:
    """The retention evaluation: replay every conversation of the shared datasets, then score
    the context (default and filled) against truncation at each budget."""
    from rich.console import Console

    from app.replay.commands import CommandFailed, EvalRequest, dumped, parse_budgets, run_eval
    from app.replay.datasets import default_datasets_dir
    from app.replay.evaluation import EvalOptions
    from app.replay.run import Schedule
    from app.replay.target import ServiceTarget

    if url is not None and key is None:
        raise fail("--url needs --key: an API key of the tenant to evaluate in")
    console = Console(stderr=True)
    try:
        request = EvalRequest(
            datasets or default_datasets_dir(),
            EvalOptions(
                schedule=Schedule(every=every, pending_tokens=pending_tokens, keep=keep),
                budgets=parse_budgets(budgets),
            ),
            sets=None if sets is None else frozenset(p.strip() for p in sets.split(",")),
            limit=limit,
            target=None if url is None or key is None else ServiceTarget(url, key),
        )
        result = run_eval(request, Settings(), console, markdown_out)
    except CommandFailed as error:
        raise fail(error.message, error.code) from None
    if json_out is not None:
        json_out.write_text(dumped(result) + "\n")
    else:
        typer.echo(dumped(result))
    if not all(target["pass"] for target in result["targets"]):
        console.print("evaluation: some targets are not met (see 'targets')", highlight=False)


# --- mcp: workmem's tools for MCP hosts (the `mcp` extra) -------------------------------------


@cli.command("mcp")
def mcp_server(
    http: Annotated[
        bool, typer.Option("--http", help="serve streamable HTTP instead of stdio")
    ] = False,
    host: Annotated[str, typer.Option(help="bind address of --http")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="port of --http")] = 8765,
) -> None:
    """Serve workmem's tools and working memory to an MCP host, on stdio (or --http). The
    deployment and key come from WORKMEM_URL and WORKMEM_API_KEY (WORKMEM_SESSION: a default
    agent session)."""
    try:
        from app.mcp.command import MissingApiKey, run
    except ModuleNotFoundError as error:
        raise fail(
            f"workmem mcp needs the mcp extra ({error.name} is missing): pip install 'workmem[mcp]'"
        ) from None
    try:
        run(http=http, host=host, port=port)
    except MissingApiKey as error:
        raise fail(str(error)) from None


def main() -> None:
    from sqlalchemy import exc as sa_exc

    from app.errors import AppError

    try:
        cli()
    except (CliError, PrivilegedLogin) as error:
        print(f"workmem: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    except AppError as error:
        print(f"workmem: {error.detail}", file=sys.stderr)
        raise SystemExit(1) from None
    except (sa_exc.OperationalError, sa_exc.InterfaceError, OSError) as error:
        # A database that cannot be reached (at migration time, or before the service's own
        # translation applies): one line saying so, never the driver's traceback.
        print(f"workmem: cannot reach the database: {_first_line(error)}", file=sys.stderr)
        raise SystemExit(1) from None


def _first_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__


if __name__ == "__main__":
    main()
