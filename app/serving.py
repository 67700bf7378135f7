"""Running the HTTP server of ``workmem serve``: bind, say so, serve, stop cleanly on a signal.

Owns the order of a server process's life: the socket is bound before "serving on" is printed
(so the line means a client can connect), and on SIGTERM or SIGINT uvicorn shuts down
gracefully, then the embedded cluster is let go of, and only then does the process end with the
signal's own exit status. uvicorn re-raises a caught signal after its shutdown; with the default
disposition that would end the process before any exit hook stops the cluster. Holds no
feature logic. With the embedded cluster, a supervisor thread restarts it if its postmaster dies.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

from app.config import Settings
from app.embedded import EmbeddedPostgres, Supervisor
from app.http_guard import ConnectionLimits, protocol_factory

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Announcing(uvicorn.Server):
    """A uvicorn server that prints ``announce`` once its socket is bound and listening."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[], None]) -> None:
        super().__init__(config)
        self.announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.announce()


def serve(
    settings: Settings,
    *,
    workers: int,
    embedded: EmbeddedPostgres | None,
    app_factory: Callable[[Settings], Any],
) -> None:
    """Serve until stopped; with ``embedded``, stop using the cluster before exiting."""

    def announce() -> None:
        print(f"workmem: serving on http://{settings.host}:{settings.port}", flush=True)  # noqa: T201

    limits = ConnectionLimits(
        header_timeout_s=settings.http_header_timeout_s,
        max_connections=settings.http_max_connections,
        max_header_bytes=settings.http_max_header_bytes,
    )
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_config": None,
        "timeout_graceful_shutdown": 10,
        "timeout_keep_alive": settings.http_keep_alive_s,
        "h11_max_incomplete_event_size": settings.http_max_header_bytes,
        "http": protocol_factory(limits),
    }
    received: list[int] = []

    def remember(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)

    # uvicorn restores these after its own shutdown and raises the signal again: it then lands
    # here, and the process ends below, after the cluster was let go of.
    previous = {signum: signal.signal(signum, remember) for signum in STOP_SIGNALS}
    started = True
    supervisor = (
        Supervisor(embedded) if embedded is not None and settings.embedded_restart else None
    )
    if supervisor is not None:
        supervisor.start()
    try:
        if workers == 1:
            server = _Announcing(uvicorn.Config(app_factory(settings), **options), announce)
            server.run()
            started = server.started
        else:
            # Several processes import the app by name and read their settings from the
            # environment; uvicorn picks uvloop by itself when it is installed.
            os.environ["DATABASE_URL"] = str(settings.database_url)
            os.environ.pop("WORKMEM_DATABASE_URL", None)
            config = uvicorn.Config("app.asgi:app", workers=workers, **options)
            sock = config.bind_socket()
            announce()
            Multiprocess(config, sockets=[sock]).run()
    finally:
        if supervisor is not None:
            supervisor.stop()
        if embedded is not None:
            embedded.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if not started:
        sys.exit(3)  # uvicorn's own status for a server that could not start
    if received:
        signal.signal(received[0], signal.SIG_DFL)
        os.kill(os.getpid(), received[0])
