"""The root application's error rendering: ``AppError``s, invalid requests, HTTP errors and
anything unexpected become problem+json.

A mounted sub-application renders its own envelope; where the root must answer for it (a body
refused before routing, a path its mount cannot match) it asks the renderer the sub-application
registered for its prefix (``SubApps``): this module knows no adapter. ``unexpected_error`` is
the one way an error no handler took is logged and turned into an ``AppError``, for the root and
every sub-application alike. Never raises, never logs a request's content.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import metrics
from app.db_errors import is_unavailable, translate
from app.errors import AppError, PayloadTooLarge, RequestTimeout, Unavailable, field_errors

logger = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"


def problem(
    status: int,
    type_: str,
    title: str,
    detail: str,
    errors: list[Any] | None = None,
    *,
    retry_after_s: float | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": type_,
        "title": title,
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        body["errors"] = errors
    headers = None
    if retry_after_s is not None:
        headers = {"Retry-After": str(max(1, math.ceil(retry_after_s)))}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def app_problem(error: AppError) -> JSONResponse:
    if error.status == 503:
        metrics.DATABASE_ERRORS.labels(error.type).inc()
    return problem(
        error.status,
        error.type,
        error.title,
        error.detail,
        None if error.errors is None else field_errors(error.errors),
        retry_after_s=error.retry_after_s,
    )


# Statuses the body guard raises while a body is read, answered with our types.
_HTTP_ERRORS: dict[int, type[AppError]] = {413: PayloadTooLarge, 408: RequestTimeout}


Render = Callable[[int, str], Response]
"""A sub-application's answer to a status and a detail, in its own envelope."""


@dataclass(slots=True)
class SubApps:
    """The error renderers of the sub-applications mounted on the root, by path prefix."""

    renderers: dict[str, Render] = field(default_factory=dict)

    def register(self, prefix: str, render: Render) -> None:
        self.renderers[prefix] = render

    def renderer(self, path: str) -> Render | None:
        for prefix, render in self.renderers.items():
            if path.startswith(prefix + "/"):
                return render
        return None

    def too_large(self, scope: Any, max_bytes: int) -> Response:
        """The answer to a body declared above the limit, in the form of the API it was sent
        to."""
        detail = f"the request body is above the limit of {max_bytes} bytes"
        render = self.renderer(str(scope.get("path", "")))
        if render is not None:
            return render(413, detail)
        return app_problem(PayloadTooLarge(detail))


def unexpected_error(error: BaseException, path: str) -> AppError:
    """What an error no handler took stands for: the database's unavailability (or another
    driver error with a meaning), else an internal error, logged once here."""
    translated = translate(error)
    if isinstance(translated, AppError):
        return translated
    if isinstance(error, sa_exc.SQLAlchemyError) and is_unavailable(error):
        return Unavailable("the database is unreachable; retry shortly")
    # The type only: a driver's message can quote the statement's values (content).
    logger.error("unhandled error", extra={"path": path, "error_type": type(error).__name__})
    return AppError("an unexpected error occurred")


def install_error_handlers(app: FastAPI, sub_apps: SubApps) -> None:
    @app.exception_handler(AppError)
    async def app_error(_: Request, error: AppError) -> JSONResponse:
        return app_problem(error)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        return problem(
            422,
            "validation_error",
            "The request is not valid",
            "see 'errors' for the fields that failed",
            field_errors(error.errors()),
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        render = sub_apps.renderer(request.url.path)
        if render is not None:
            # A path the mount cannot match (a newline in an id): still the sub-app's answer.
            return render(error.status_code, f"no such endpoint: {request.url.path!r}")
        known = _HTTP_ERRORS.get(error.status_code)
        if known is not None:
            return app_problem(known(str(error.detail)))
        phrase = HTTPStatus(error.status_code).phrase
        type_ = phrase.lower().replace(" ", "_")
        return problem(error.status_code, type_, phrase, str(error.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        return app_problem(unexpected_error(error, request.url.path))
