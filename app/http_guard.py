"""What uvicorn lacks against slow and idle clients: a deadline for a request's headers and a
cap on the connections one process holds.

uvicorn closes a keep-alive connection that stays idle after a response, but a connection that
never sends a request, or sends its request line and headers a byte at a time (slowloris), is
held for ever. These protocols (uvicorn's own two, h11 and httptools, extended) close a
connection whose request headers are not whole ``header_timeout_s`` after it opened or after
the previous response, or whose pending headers pass ``max_header_bytes``, and close a new
connection at once when the process already holds ``max_connections``. A body that stops
arriving is the application's to time out (408, ``WORKMEM_BODY_*_TIMEOUT_S``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.metrics import CONNECTIONS_CLOSED


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout_s: float = 10.0
    max_connections: int = 1000
    max_header_bytes: int = 64 * 1024


class _Deadline:
    """The headers' deadline of one connection; ``awaiting`` says whether headers are due."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        transport: asyncio.BaseTransport,
        limits: ConnectionLimits,
        awaiting: Callable[[], bool],
    ) -> None:
        self.loop = loop
        self.transport = transport
        self.limits = limits
        self.awaiting = awaiting
        self.handle: asyncio.TimerHandle | None = None
        self.pending_bytes = 0

    def arm(self) -> None:
        """A request's headers are due from now."""
        self.cancel()
        self.pending_bytes = 0
        if not self.transport.is_closing():
            self.handle = self.loop.call_later(self.limits.header_timeout_s, self.expire)

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def expire(self) -> None:
        self.handle = None
        if self.awaiting():
            self.close("header_timeout")

    def received(self, size: int) -> None:
        """``size`` bytes arrived and were parsed; count them while the headers are not whole."""
        if not self.awaiting():
            self.pending_bytes = 0
            return
        self.pending_bytes += size
        if self.pending_bytes > self.limits.max_header_bytes:
            self.close("header_too_large")

    def close(self, reason: str) -> None:
        if not self.transport.is_closing():
            CONNECTIONS_CLOSED.labels(reason).inc()
            self.transport.close()


def _over_cap(protocol: Any, limits: ConnectionLimits, transport: asyncio.BaseTransport) -> bool:
    if len(protocol.connections) > limits.max_connections:
        CONNECTIONS_CLOSED.labels("connection_cap").inc()
        transport.close()
        return True
    return False


class GuardedH11Protocol(H11Protocol):
    def __init__(self, *args: Any, limits: ConnectionLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.deadline: _Deadline | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if _over_cap(self, self.limits, transport):
            return
        self.deadline = _Deadline(
            self.loop, transport, self.limits, lambda: self.conn.their_state is h11.IDLE
        )
        self.deadline.arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.deadline is not None:
            self.deadline.received(len(data))

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.deadline is not None:
            self.deadline.arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        super().connection_lost(exc)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, limits: ConnectionLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.deadline: _Deadline | None = None
        self.headers_parsed = 0
        self.responses_done = 0

    def awaiting_headers(self) -> bool:
        return self.headers_parsed == self.responses_done

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if _over_cap(self, self.limits, transport):
            return
        self.deadline = _Deadline(self.loop, transport, self.limits, self.awaiting_headers)
        self.deadline.arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.deadline is not None:
            self.deadline.received(len(data))

    def on_headers_complete(self) -> None:
        self.headers_parsed += 1
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        self.responses_done += 1
        super().on_response_complete()
        if self.deadline is not None and self.awaiting_headers():
            self.deadline.arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        super().connection_lost(exc)


def protocol_factory(limits: ConnectionLimits) -> Any:
    """The HTTP protocol for uvicorn's ``http`` option, with ``limits``: httptools, which
    uvicorn picks by itself when installed (it is a dependency). Picklable, for worker
    processes. ``GuardedH11Protocol`` is the same guard over h11, for ``http="h11"``."""
    return functools.partial(GuardedHttpToolsProtocol, limits=limits)
