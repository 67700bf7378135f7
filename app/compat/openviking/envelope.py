"""OpenViking's response envelope and error codes, and how our errors map onto them.

Every answer under ``/api/v1`` is ``{"status", "result", "error", "telemetry"}``; an error's
HTTP status is always the one its code has in OpenViking. Owns the mapping from our error types;
never decides when an error happens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Final, Generic, Literal, TypeVar

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from app.errors import AppError, NotFound

ResultT = TypeVar("ResultT")


class ErrorCode(StrEnum):
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    NOT_FOUND = "NOT_FOUND"
    CONFLICT = "CONFLICT"
    INTERNAL = "INTERNAL"
    UNAVAILABLE = "UNAVAILABLE"

    @property
    def http_status(self) -> int:
        return _HTTP_STATUS[self]


_HTTP_STATUS: Final[Mapping[ErrorCode, int]] = {
    ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.PERMISSION_DENIED: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.INTERNAL: 500,
    ErrorCode.UNAVAILABLE: 503,
}
_CODE_BY_STATUS: Final[Mapping[int, ErrorCode]] = {
    status: code for code, status in _HTTP_STATUS.items()
}


def code_for_status(status: int) -> ErrorCode:
    """The code of one of our statuses. OpenViking has no 405, 413 or 422: every other client
    error is ``INVALID_ARGUMENT``, every other server error ``INTERNAL``; a per-tenant limit
    (429) is ``UNAVAILABLE``, which its clients retry."""
    if status == 429:
        return ErrorCode.UNAVAILABLE
    found = _CODE_BY_STATUS.get(status)
    if found is not None:
        return found
    return ErrorCode.INVALID_ARGUMENT if 400 <= status < 500 else ErrorCode.INTERNAL


class ErrorInfo(BaseModel):
    code: ErrorCode
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class Envelope(BaseModel, Generic[ResultT]):
    status: Literal["ok"] = "ok"
    result: ResultT
    error: None = None
    telemetry: None = Field(default=None, description="always null: no telemetry is collected")


class ErrorEnvelope(BaseModel):
    status: Literal["error"] = "error"
    result: None = None
    error: ErrorInfo
    telemetry: None = None


ERROR_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    code.http_status: {"model": ErrorEnvelope} for code in ErrorCode
}
"""The error answers every route may give, for the OpenAPI document."""


class ResourceNotFound(NotFound):
    """A session, archive, task or route that does not exist or is not this credential's.

    Carries what was looked for: OpenViking's client builds its error message from the
    ``resource`` and ``type`` details.
    """

    def __init__(self, resource_type: str, resource: str) -> None:
        super().__init__(f"{resource_type.capitalize()} {resource} not found")
        self.resource_type = resource_type
        self.resource = resource


def error_response(
    code: ErrorCode, message: str, details: Mapping[str, Any] | None = None
) -> JSONResponse:
    body = ErrorEnvelope(error=ErrorInfo(code=code, message=message, details=dict(details or {})))
    return JSONResponse(body.model_dump(mode="json"), status_code=code.http_status)


def validation_details(errors: Sequence[Mapping[str, object]]) -> dict[str, Any]:
    return {"validation_errors": [dict(item) for item in errors]}


def app_error_response(error: AppError) -> JSONResponse:
    details: dict[str, Any] = {}
    if isinstance(error, ResourceNotFound):
        details = {"resource": error.resource, "type": error.resource_type}
    elif error.errors is not None:
        details = validation_details(error.errors)
    response = error_response(code_for_status(error.status), error.detail, details)
    if error.retry_after_s is not None:
        response.headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_s)))
    return response
