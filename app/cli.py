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
from app.db import Database
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


@dataclass(slots=True)
class Runtime:
    settings: Settings
    url: str
    embedded: EmbeddedPostgres | None


def runtime(settings: Settings | None = None) -> Runtime:
    """Resolve the database: ``DATABASE_URL`` if set, else the embedded cluster under home."""
    settings = settings or Settings()
    if settings.database_url:
        return Runtime(settings, settings.database_url, None)
    embedded = start_embedded(settings.embedded_data_dir)
    url = embedded.url()
    return Runtime(settings.model_copy(update={"database_url": url}), url, embedded)


def run_db(work: Callable[[Database], Awaitable[T]], url: str) -> T:
    async def main() -> T:
        database = Database.from_url(url, pool_size=2)
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
        async with database.system() as db:
            if await tenancy.verify_key(db, existing) is not None:
                return existing
    async with database.system() as db:
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
    migrate: Annotated[
        bool, typer.Option(help="run migrations at start (always on for the embedded database)")
    ] = False,
) -> None:
    """Run the HTTP API (embedded Postgres unless DATABASE_URL is set)."""
    import uvicorn

    from app.main import create_app

    base = Settings()
    overrides: dict[str, Any] = {}
    if host is not None:
        overrides["host"] = host
    if port is not None:
        overrides["port"] = port
    settings = base.model_copy(update=overrides)
    configure_logging(settings.log_level, as_json=settings.log_json)
    resolved = runtime(settings)
    if resolved.embedded is not None or migrate:
        migrations.upgrade(resolved.url)
    refuse_mismatched_embedder(resolved.settings, resolved.url)
    if resolved.embedded is not None:
        key_file = resolved.settings.key_file
        write_local_key(resolved.url, key_file)
        print(f"workmem: embedded Postgres in {resolved.settings.embedded_data_dir}", flush=True)
        print(f"workmem: API key for the local tenant is in {key_file}", flush=True)
    print(
        f"workmem: serving on http://{resolved.settings.host}:{resolved.settings.port}", flush=True
    )
    uvicorn.run(
        create_app(resolved.settings),
        host=resolved.settings.host,
        port=resolved.settings.port,
        log_config=None,
        timeout_graceful_shutdown=10,
    )


@cli.command()
def worker(
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="archives processed at once")] = 1,
) -> None:
    """Process archives (phase 2) until SIGTERM/SIGINT; run as many processes as you like."""
    from app.archives.worker import ArchiveWorker
    from app.main import (
        build_embedder,
        build_generator,
        build_memory_extractor,
        build_worker,
        close_embedder,
    )

    settings = Settings()
    configure_logging(settings.log_level, as_json=settings.log_json)
    resolved = runtime(settings)
    refuse_mismatched_embedder(resolved.settings, resolved.url)

    async def main() -> None:
        database = Database.from_url(resolved.url, pool_size=max(2, concurrency + 1))
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
        try:
            await asyncio.gather(*(worker.run(stop) for worker in workers))
        finally:
            await close_embedder(embedder)
            await database.dispose()

    asyncio.run(main())


# --- db ----------------------------------------------------------------------------------------


@db_cli.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument()] = "head") -> None:
    """Migrate the database up to REVISION (default: head)."""
    migrations.upgrade(runtime().url, revision)


@db_cli.command("downgrade")
def db_downgrade(revision: Annotated[str, typer.Argument(help="target, e.g. -1 or base")]) -> None:
    """Migrate the database down to REVISION."""
    migrations.downgrade(runtime().url, revision)


@db_cli.command("current")
def db_current() -> None:
    """Print the database's current revision."""
    migrations.current(runtime().url)


# --- tenants and keys --------------------------------------------------------------------------


@tenants_cli.command("create")
def tenants_create(name: Annotated[str, typer.Argument(help="display name")]) -> None:
    """Create a tenant and print it as JSON."""

    async def work(database: Database) -> dict[str, str]:
        async with database.system() as db:
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
        async with database.system() as db:
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
        async with database.system() as db:
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
        async with database.system() as db:
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


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
