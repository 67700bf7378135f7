"""Application errors: each carries its HTTP status and a stable ``type`` string.

Owns the error vocabulary of the API. Never imports a web framework: one handler in ``main``
renders these as problem+json.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar


class AppError(Exception):
    status: ClassVar[int] = 500
    type: ClassVar[str] = "internal"
    title: ClassVar[str] = "Internal error"
    retry_after_s: float | None = None
    """When set, the answer carries ``Retry-After`` (whole seconds, rounded up)."""

    def __init__(
        self,
        detail: str | None = None,
        *,
        errors: Sequence[Mapping[str, object]] | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.errors = list(errors) if errors is not None else None
        if retry_after_s is not None:
            self.retry_after_s = retry_after_s


class BadRequest(AppError):
    status, type, title = 400, "bad_request", "Bad request"


class Unauthenticated(AppError):
    status, type, title = 401, "unauthenticated", "Missing or invalid credentials"


class Forbidden(AppError):
    status, type, title = 403, "forbidden", "Not allowed for this credential"


class NotFound(AppError):
    status, type, title = 404, "not_found", "Not found"


class Conflict(AppError):
    status, type, title = 409, "conflict", "Conflict"


class PayloadTooLarge(AppError):
    status, type, title = 413, "payload_too_large", "Payload too large"


class InvalidInput(AppError):
    status, type, title = 422, "validation_error", "The request is not valid"


class RequestTimeout(AppError):
    status, type, title = 408, "request_timeout", "The request body did not arrive in time"


class RateLimited(AppError):
    status, type, title = 429, "rate_limited", "Too many requests for this tenant"


class QuotaExceeded(AppError):
    status, type, title = 429, "quota_exceeded", "A quota of this tenant is used up"


class Unavailable(AppError):
    status, type, title = 503, "unavailable", "A backing service is unavailable"
    retry_after_s = 1.0


class DatabaseTimeout(Unavailable):
    """Postgres cancelled a statement that ran past ``statement_timeout`` or waited too long
    for a lock: the database answers, but too slowly for this request."""

    type, title = "database_timeout", "The database did not finish in time"


class DatabaseConflict(Unavailable):
    """A deadlock or a serialization failure with concurrent requests; nothing was written,
    and the same request is likely to succeed when retried."""

    type, title = "database_conflict", "A conflict with concurrent requests"


def field_errors(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Validation errors (pydantic's) as every API reports them: where, what, and which kind."""
    return [
        {
            "loc": list(item.get("loc", ())),
            "msg": _message(item),
            "type": item.get("type"),
        }
        for item in items
    ]


def _message(item: Mapping[str, Any]) -> str:
    """pydantic's message, with the parser's own reason for a body that is not JSON."""
    message = str(item.get("msg", ""))
    context = item.get("ctx")
    if item.get("type") == "json_invalid" and isinstance(context, Mapping) and context.get("error"):
        return f"{message}: {context['error']}"
    return message
