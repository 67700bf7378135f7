"""``workmem serve`` and ``workmem worker``: the long-running processes."""

from __future__ import annotations

import asyncio
import errno
import signal
import socket
from typing import Annotated, Any

import typer

from app.cli.base import (
    CliError,
    cli,
    refuse_mismatched_embedder,
    run_db,
    runtime,
    upgrade_database,
    write_local_key,
)
from app.config import Settings
from app.db import Bounds, Database
from app.observability import configure_logging


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
    # A port another process holds fails here, in one line, before any database work.
    refuse_busy_port(settings.host, settings.port)
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


def refuse_busy_port(host: str, port: int) -> None:
    """Bind the address the server will listen on, as it will, and let it go again."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as error:
        raise CliError(f"cannot listen on {host}: {error.strerror} (check --host)") from None
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise CliError(
                    f"{host}:{port} is already in use (another workmem serve?): stop it, "
                    "or choose another port with --port"
                ) from None
            raise CliError(f"cannot listen on {host}:{port}: {error.strerror}") from None


@cli.command()
def worker(
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="archives processed at once")] = 1,
) -> None:
    """Process archives (phase 2) until SIGTERM/SIGINT; run as many processes as you like."""
    from app import telemetry
    from app.archives.worker import ArchiveWorker
    from app.usage.recorder import UsageRecorder
    from app.wiring import (
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
        owns_telemetry = telemetry.start(resolved.settings)
        usage = UsageRecorder(database)
        generator = build_generator(resolved.settings, usage.record)
        embedder = build_embedder(resolved.settings, usage.record)
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
        loops.append(usage.run(stop))
        if deliverer is not None:
            loops.append(deliverer.run(stop))
        try:
            await asyncio.gather(*loops)
        finally:
            if deliverer is not None:
                await deliverer.close()
            await close_embedder(embedder)
            await database.dispose()
            if owns_telemetry:
                telemetry.stop()

    try:
        asyncio.run(main())
    finally:
        if resolved.embedded is not None:
            resolved.embedded.stop()
