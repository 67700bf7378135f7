"""How request bodies are read: strict JSON, large ones parsed off the event loop, slow ones
timed out, oversized ones never read.

Owns ``StrictJsonRoute`` (every JSON body parsed by ``validation.loads_strict``, so ``NaN``,
``1e400`` or a body nested too deep is a 422 before any handler runs) and ``BodyGuard`` (a body
declared larger than the limit is refused before a byte of it is read, one without a declared
length is cut off when it passes the limit, and one that stalls or trickles answers 408 instead
of holding its connection). Starlette's own body limit is not used: it replaces any answer
given while a declared length is too large with a plain-text one, where every answer here is
problem+json (or the OpenViking envelope). Never looks inside a body beyond parsing it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

import anyio.to_thread
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.validation import loads_strict

OFF_LOOP_BYTES = 256 * 1024
"""Bodies at least this large are parsed in a worker thread: a few MiB of JSON take tens of
milliseconds, which every other request on the event loop would otherwise wait for."""


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            if len(body) >= OFF_LOOP_BYTES:
                self._json = await anyio.to_thread.run_sync(loads_strict, body)
            else:
                self._json = loads_strict(body)
        return self._json


class StrictJsonRoute(APIRoute):
    """A route whose JSON body is parsed strictly (see the module docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict


Refusal = Callable[[Scope, int], Response]
"""The 413 answer for a request (problem+json, or the envelope of the API it was sent to)."""


class BodyGuard:
    """Pure ASGI middleware: 413 for a body whose ``Content-Length`` is above ``max_bytes``,
    answered at once; 408 for a body that stops arriving for ``idle_s`` or is still incomplete
    ``total_s`` after its first read. The server closes the connection after either answer,
    since the body was never read to its end."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int, idle_s: float, total_s: float, refuse: Refusal
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.idle_s = idle_s
        self.total_s = total_s
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self.refuse(scope, self.max_bytes)(scope, receive, send)
            return
        deadline: float | None = None
        complete = False
        received = 0

        async def timed_receive() -> Message:
            nonlocal deadline, complete, received
            if complete:
                return await receive()
            now = time.monotonic()
            if deadline is None:
                deadline = now + self.total_s
            try:
                async with asyncio.timeout(min(self.idle_s, max(0.0, deadline - now))):
                    message = await receive()
            except TimeoutError:
                raise HTTPException(
                    408, "the request body did not arrive in time; send it whole and retry"
                ) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(
                        413, f"the request body is above the limit of {self.max_bytes} bytes"
                    )
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        await self.app(scope, timed_receive, send)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
