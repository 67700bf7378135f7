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

    def __init__(
        self,
        detail: str | None = None,
        *,
        errors: Sequence[Mapping[str, object]] | None = None,
    ) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.errors = list(errors) if errors is not None else None


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


class Unavailable(AppError):
    status, type, title = 503, "unavailable", "A backing service is unavailable"


def field_errors(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Validation errors (pydantic's) as every API reports them: where, what, and which kind."""
    return [
        {
            "loc": list(item.get("loc", ())),
            "msg": str(item.get("msg", "")),
            "type": item.get("type"),
        }
        for item in items
    ]
