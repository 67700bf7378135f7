"""Request bodies against the real server: the size limit is enforced while reading, a body that
stalls is answered 408, and a large message is measured off the event loop (defect 7)."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator

import pytest

from app.sessions.schemas import MessageCreate
from app.sessions.service import OFF_LOOP_CHARACTERS, Limits, prepare_append_off_loop
from tests.support.servers import Server

LIMIT = 256 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("bodies") / "home"
    running = Server(
        home,
        env={
            "WORKMEM_MAX_BODY_BYTES": str(LIMIT),
            "WORKMEM_BODY_IDLE_TIMEOUT_S": "1",
            "WORKMEM_BODY_TIMEOUT_S": "3",
            "WORKMEM_MAX_METADATA_BYTES": str(LIMIT),
        },
    )
    running.wait_ready()
    yield running
    running.stop()


def exchange(server: Server, head: bytes, body: bytes = b"") -> bytes:
    """Send a request head (and part of a body), then read the answer until the server closes
    the connection or has answered; a server that waited for the rest would time this out."""
    key = (server.home / "local-api-key").read_text().strip()
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as connection:
        request = head.replace(b"KEY", key.encode())
        connection.sendall(request + body)
        answer = b""
        while not answered_whole(answer):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def answered_whole(answer: bytes) -> bool:
    """Whether ``answer`` holds a whole HTTP answer: its head and as much body as it declares
    (the head and the body may arrive in separate packets)."""
    head, separator, body = answer.partition(b"\r\n\r\n")
    if not separator:
        return False
    declared = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
    return declared is None or len(body) >= int(declared.group(1))


e2e = pytest.mark.e2e


@e2e
def test_a_declared_length_above_the_limit_is_refused_before_the_body_is_read(
    server: Server,
) -> None:
    head = (
        b"POST /v1/sessions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer KEY\r\n"
        b"Content-Type: application/json\r\nContent-Length: 31457280\r\n\r\n"
    )
    answer = exchange(server, head, b'{"metadata": {"x": "')  # 30 MB announced, 20 bytes sent
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"application/problem+json" in answer
    assert b"payload_too_large" in answer


@e2e
def test_a_chunked_body_is_cut_off_at_the_limit(server: Server) -> None:
    head = (
        b"POST /v1/sessions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer KEY\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    piece = b"x" * 65536
    chunk = hex(len(piece))[2:].encode() + b"\r\n" + piece + b"\r\n"
    answer = exchange(server, head, chunk * (LIMIT // len(piece) + 2))
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


@e2e
def test_a_body_that_stops_arriving_is_answered_408_and_the_connection_closed(
    server: Server,
) -> None:
    head = (
        b"POST /v1/sessions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer KEY\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    answer = exchange(server, head, b'{"metadata": ')
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"request_timeout" in answer


@e2e
def test_a_body_under_the_limit_is_served(server: Server) -> None:
    body = b'{"metadata": {"note": "' + b"y" * (LIMIT // 2) + b'"}}'
    head = (
        b"POST /v1/sessions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer KEY\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
    )
    answer = exchange(server, head, body)
    assert answer.startswith(b"HTTP/1.1 201"), answer[:300]


@pytest.mark.parametrize(
    ("characters", "off_loop"),
    [(OFF_LOOP_CHARACTERS - 1, False), (OFF_LOOP_CHARACTERS, True), (4 * 1024 * 1024, True)],
)
async def test_large_messages_are_measured_while_the_event_loop_runs(
    characters: int, off_loop: bool
) -> None:
    """While a large message is tokenized, other tasks keep running: the loop ticks."""
    message = MessageCreate(
        role="user", content="word " * (characters // 5) + "x" * (characters % 5)
    )
    ticks = 0
    done = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    ticks = 0
    prepared = await prepare_append_off_loop([message], Limits(max_message_bytes=8 * 1024 * 1024))
    during = ticks
    done.set()
    await ticker
    assert prepared.token_counts[0] > 0
    assert (during > 0) is off_loop, during
