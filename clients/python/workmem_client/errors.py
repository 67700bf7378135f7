"""The client's exceptions: one per problem ``type`` the API answers with, under ``WorkmemError``.

Owns turning an error answer (problem+json, or anything else a proxy may send) into a typed
exception that keeps the problem's ``type``, ``status``, ``title``, ``detail`` and field
``errors``. Never retries or decides anything: ``retry`` says when a request is repeated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import httpx


class WorkmemError(Exception):
    """An answer of the API that is not a success, or a request that got no answer."""

    status_code: ClassVar[int] = 0

    def __init__(
        self,
        type_: str,
        status: int,
        title: str,
        detail: str,
        errors: Sequence[Mapping[str, Any]] | None = None,
        *,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(f"{status} {type_}: {detail}")
        self.type = type_
        """The problem's stable ``type`` (``not_found``, ``validation_error``, …)."""
        self.status = status
        self.title = title
        self.detail = detail
        self.errors = [dict(item) for item in errors] if errors is not None else None
        """Field errors of a validation problem: ``loc``, ``msg``, ``type``."""
        self.retry_after = retry_after
        """The answer's ``Retry-After`` header, when it had one."""


class BadRequestError(WorkmemError):
    status_code = 400


class UnauthenticatedError(WorkmemError):
    status_code = 401


class ForbiddenError(WorkmemError):
    status_code = 403


class NotFoundError(WorkmemError):
    status_code = 404


class ConflictError(WorkmemError):
    status_code = 409


class PayloadTooLargeError(WorkmemError):
    status_code = 413


class ValidationError(WorkmemError):
    status_code = 422


class RateLimitedError(WorkmemError):
    status_code = 429


class UnavailableError(WorkmemError):
    status_code = 503


class WorkmemConnectionError(WorkmemError):
    """The request got no answer: the server could not be reached, or it timed out."""


ERRORS_BY_STATUS: Mapping[int, type[WorkmemError]] = {
    error.status_code: error
    for error in (
        BadRequestError,
        UnauthenticatedError,
        ForbiddenError,
        NotFoundError,
        ConflictError,
        PayloadTooLargeError,
        ValidationError,
        RateLimitedError,
        UnavailableError,
    )
}


def error_from(response: httpx.Response) -> WorkmemError:
    """The exception for an error answer: its class by status, its fields from problem+json
    (or, for a body that is not one, the status phrase and the start of the body)."""
    body: Any = None
    try:
        body = json.loads(response.content) if response.content else None
    except ValueError:
        body = None
    status = response.status_code
    cls = ERRORS_BY_STATUS.get(status, WorkmemError)
    retry_after = response.headers.get("retry-after")
    if isinstance(body, dict) and isinstance(body.get("type"), str):
        errors = body.get("errors")
        return cls(
            body["type"],
            status,
            str(body.get("title") or response.reason_phrase),
            str(body.get("detail") or ""),
            errors if isinstance(errors, list) else None,
            retry_after=retry_after,
        )
    text = response.text[:300] if response.content else ""
    return cls("http_error", status, response.reason_phrase, text, retry_after=retry_after)


def connection_error(error: httpx.TransportError) -> WorkmemConnectionError:
    kind = "timeout" if isinstance(error, httpx.TimeoutException) else "connection_error"
    return WorkmemConnectionError(kind, 0, "No answer", f"{type(error).__name__}: {error}")


def archive_missing(archive_seq: int) -> NotFoundError:
    return NotFoundError("not_found", 404, "Not found", f"archive {archive_seq} not found")
