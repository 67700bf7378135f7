"""The error answers of ``/v1`` as the OpenAPI document states them: problem+json, per status.

Owns the ``Problem`` schema (RFC 9457, as ``main`` renders every ``AppError`` and validation
error), the description of each status a route may answer, and ``document_problems``, which
gives each documented error answer the ``application/problem+json`` media type it really has
and replaces FastAPI's default 422 schema (which no route answers) with ``Problem``. Never
decides when an error happens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from fastapi import FastAPI
from pydantic import BaseModel, Field

PROBLEM_JSON: Final = "application/problem+json"


class FieldProblem(BaseModel):
    loc: list[str | int] = Field(description="where: 'body', 'query' or 'path', then the field")
    msg: str
    type: str | None


class Problem(BaseModel):
    """An error, as every ``/v1`` route answers one (RFC 9457)."""

    type: str = Field(description="a stable code, e.g. not_found, validation_error")
    title: str
    status: int
    detail: str
    errors: list[FieldProblem] | None = Field(
        default=None, description="the fields that failed, for validation problems"
    )


DESCRIPTIONS: Final[Mapping[int, str]] = {
    400: "the request cannot be served as sent",
    401: "no API key, or an unknown, malformed or revoked one",
    403: "the key may not do this (a reader writing, a user-bound key naming another user, "
    "a writer managing keys, the operator token on tenant data)",
    404: "no such object for this key: missing, another tenant's or another user's",
    408: "the request body stalled or did not arrive in time",
    409: "the object exists, or is not in a state that allows this; for an Idempotency-Key, a "
    "request with the same key is still being answered",
    413: "the body, a message, its metadata, or a batch is above its limit",
    422: "the body or query failed validation ('errors' names the fields); for an "
    "Idempotency-Key, the key was used for a different request",
    429: "a per-tenant rate limit or quota was reached; see the Retry-After header",
    503: "the database is unreachable, timed out or hit a deadlock; retry after Retry-After",
}

RETRY_AFTER: Final[dict[str, Any]] = {
    "Retry-After": {
        "description": "seconds to wait before retrying",
        "schema": {"type": "integer", "minimum": 0},
    }
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route or router: each status answered as a ``Problem``."""
    documented: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        entry: dict[str, Any] = {"model": Problem, "description": DESCRIPTIONS[status]}
        if status in (429, 503):
            entry["headers"] = RETRY_AFTER
        documented[status] = entry
    return documented


TENANT_ROUTE: Final = (401, 403, 429, 503)
"""What any route taking a tenant's API key may answer, whatever it does."""
WITH_BODY: Final = (408, 413, 422)
"""What a route reading a JSON body may answer besides its own errors."""


def document_problems(app: FastAPI) -> None:
    """Make ``app.openapi()`` state error answers as they are sent (see the module docstring)."""
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = generate()
        for path_item in document.get("paths", {}).values():
            for operation in path_item.values():
                for status, response in operation.get("responses", {}).items():
                    if not status.isdigit() or int(status) < 400:
                        continue
                    content = response.setdefault("content", {})
                    schema = content.pop("application/json", {}).get("schema")
                    if schema is None or "HTTPValidationError" in str(schema):
                        schema = {"$ref": "#/components/schemas/Problem"}
                    content[PROBLEM_JSON] = {"schema": schema}
                    if int(status) == 422:
                        response["description"] = DESCRIPTIONS[422]
        schemas = document.get("components", {}).get("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def without_validation_422(app: FastAPI) -> None:
    """For an API whose validation errors are another status (the OpenViking envelope's 400):
    drop FastAPI's default 422 answer, which no route of it gives."""
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = generate()
        for path_item in document.get("paths", {}).values():
            for operation in path_item.values():
                operation.get("responses", {}).pop("422", None)
        schemas = document.get("components", {}).get("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
