"""Slow and idle clients against the real ``workmem serve`` on loopback: a connection that sends
no request, or sends its request line and headers too slowly, is closed; connections beyond the
cap are closed at once; the server keeps serving everyone else."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.clusters import stop_cluster
from tests.support.servers import Server

CAP = 12


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    home = tmp_path / "home"
    running = Server(
        home,
        env={
            "WORKMEM_HTTP_HEADER_TIMEOUT_S": "1",
            "WORKMEM_HTTP_MAX_CONNECTIONS": str(CAP),
            "WORKMEM_HTTP_MAX_HEADER_BYTES": "8192",
        },
    )
    try:
        running.wait_ready()
        yield running
    finally:
        if running.process.poll() is None:
            running.stop()
        stop_cluster(home / "pgdata")


def connect(port: int) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port))
    # A bound on the test, not a figure under test: a connection the server never closes fails
    # the test instead of hanging it.
    client.settimeout(60)
    return client


def read_response(client: socket.socket) -> bytes:
    """One whole response (headers and a Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += client.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += client.recv(4096)
    return head + b"\r\n\r\n" + body


def closed_by_server(client: socket.socket) -> bool:
    """Whether the server ended the connection (EOF or reset) without answering a request."""
    try:
        return client.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_idle_and_slow_connections_are_closed_and_the_cap_holds(server: Server) -> None:
    idle = [connect(server.port) for _ in range(4)]
    half_sent = [connect(server.port) for _ in range(4)]
    for client in half_sent:
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    # After one answered request, a keep-alive connection that starts the next one and stalls.
    kept_alive = connect(server.port)
    kept_alive.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert read_response(kept_alive).startswith(b"HTTP/1.1 200")
    kept_alive.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127")
    oversized = connect(server.port)
    oversized.sendall(b"GET /healthz HTTP/1.1\r\nX-Pad: " + b"a" * 16_000)
    held = [*idle, *half_sent, kept_alive, oversized]
    # The cap: CAP connections are held; the ones beyond it are closed at once.
    extra = [connect(server.port) for _ in range(CAP - len(held) + 4)]
    beyond = [closed_by_server(client) for client in extra]
    assert beyond.count(True) >= 4, beyond
    # Every held connection that sent no whole request is closed by the server.
    assert [closed_by_server(client) for client in held] == [True] * len(held)
    for client in [*held, *extra]:
        client.close()
    # Room again, and the server serves as before.
    assert httpx.get(f"{server.base_url}/healthz", timeout=10).status_code == 200
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        assert [http.get("/healthz").status_code for _ in range(3)] == [200] * 3
