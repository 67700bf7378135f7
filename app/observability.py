"""Structured logging and Prometheus metrics for the service.

Owns the log format (one JSON object per line) and the HTTP metrics. Never logs request bodies,
credentials or SQL.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from prometheus_client import Counter, Histogram
from starlette.requests import Request
from starlette.responses import Response

_RESERVED = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}

REQUESTS = Counter("workmem_http_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram(
    "workmem_http_request_duration_seconds", "HTTP request latency", ["method", "route"]
)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                payload[key] = value
        if record.exc_info and record.levelno >= logging.ERROR:
            payload["error"] = repr(record.exc_info[1])
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


access_logger = logging.getLogger("workmem.access")


async def observe_request(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    started = time.perf_counter()
    response = await call_next(request)
    elapsed = time.perf_counter() - started
    route = request.scope.get("route")
    route_path = getattr(route, "path", "unmatched")
    REQUESTS.labels(request.method, route_path, str(response.status_code)).inc()
    LATENCY.labels(request.method, route_path).observe(elapsed)
    access_logger.info(
        "request",
        extra={
            "method": request.method,
            "route": route_path,
            "status": response.status_code,
            "duration_ms": round(elapsed * 1000, 2),
        },
    )
    return response
