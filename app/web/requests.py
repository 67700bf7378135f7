"""How request bodies are read: strict JSON, large ones parsed off the event loop, slow ones
timed out.

Owns ``StrictJsonRoute`` (every JSON body parsed by ``validation.loads_strict``, so ``NaN``,
``1e400`` or a body nested too deep is a 422 before any handler runs) and ``BodyDeadline``
(a body that stalls or trickles answers 408 instead of holding its connection). The size limit
itself is Starlette's, enforced while the body is read (``max_body_size`` in ``main``). Never
looks inside a body beyond parsing it.
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


class BodyDeadline:
    """Pure ASGI middleware: 408 for a request body that stops arriving for ``idle_s`` or is
    still incomplete ``total_s`` after its first read. The server closes the connection after
    the answer, since the body was never read to its end."""

    def __init__(self, app: ASGIApp, *, idle_s: float, total_s: float) -> None:
        self.app = app
        self.idle_s = idle_s
        self.total_s = total_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline: float | None = None
        complete = False

        async def timed_receive() -> Message:
            nonlocal deadline, complete
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
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        await self.app(scope, timed_receive, send)
