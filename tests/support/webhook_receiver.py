"""A webhook endpoint for tests: a loopback HTTP server that records every request it gets and
answers with scripted statuses (200 once the script is used up).

Owns serving on a free loopback port from a background thread; never checks signatures itself
(the tests do, with the ``standardwebhooks`` package, as a receiver would).
"""

from __future__ import annotations

import ssl
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest


@dataclass(frozen=True, slots=True)
class Received:
    path: str
    headers: Mapping[str, str]
    body: bytes


class WebhookReceiver:
    """``host`` and ``port`` where it listens (a free port by default), ``tls`` to serve HTTPS,
    ``hang`` to take each request and answer nothing until stopped (a hanging endpoint)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        tls: ssl.SSLContext | None = None,
        hang: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        self._statuses: deque[int] = deque()
        self._received: list[Received] = []
        self.hang = hang
        self.released = threading.Event()
        self._server = _Server(self, (host, port))
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def port(self) -> int:
        port: int = self._server.server_address[1]
        return port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks/workmem"

    def answer(self, *statuses: int) -> None:
        """Answer the next requests with these statuses, in order."""
        with self._lock:
            self._statuses.extend(statuses)

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def wait_for(self, count: int, timeout_s: float = 30.0) -> list[Received]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if len(self.received) >= count:
                return self.received
            time.sleep(0.02)
        raise AssertionError(f"{len(self.received)} webhook requests arrived, not {count}")

    def _take(self, received: Received) -> int:
        with self._lock:
            self._received.append(received)
            return self._statuses.popleft() if self._statuses else 200

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, receiver: WebhookReceiver, address: tuple[str, int]) -> None:
        self.receiver = receiver
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5.0

    def do_POST(self) -> None:
        receiver = cast(_Server, self.server).receiver
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {key.lower(): value for key, value in self.headers.items()}
        status = receiver._take(Received(self.path, headers, body))
        if receiver.hang:
            receiver.released.wait()
            return
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver()
    server.start()
    yield server
    server.stop()
