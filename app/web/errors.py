"""The one place that renders errors: ``AppError``s, invalid requests, HTTP errors and anything
unexpected become problem+json (or OpenViking's envelope under its prefix).

Never raises, never logs a request's content.
"""

from __future__ import annotations

import logging
import math
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import metrics
from app.compat.openviking.app import PREFIX as OPENVIKING_PREFIX
from app.compat.openviking.envelope import ErrorCode, code_for_status
from app.compat.openviking.envelope import error_response as openviking_error
from app.db import is_unavailable, translate
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


def too_large(scope: Any, max_bytes: int) -> Response:
    """The answer to a body declared above the limit, in the form of the API it was sent to."""
    detail = f"the request body is above the limit of {max_bytes} bytes"
    if str(scope.get("path", "")).startswith(OPENVIKING_PREFIX + "/"):
        return openviking_error(ErrorCode.INVALID_ARGUMENT, detail)
    return app_problem(PayloadTooLarge(detail))


def install_error_handlers(app: FastAPI) -> None:
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
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        if request.url.path.startswith(OPENVIKING_PREFIX + "/"):
            # A path the mount cannot match (a newline in an id): still OpenViking's answer.
            code = code_for_status(error.status_code)
            return openviking_error(code, f"no such endpoint: {request.url.path!r}")
        known = _HTTP_ERRORS.get(error.status_code)
        if known is not None:
            return app_problem(known(str(error.detail)))
        phrase = HTTPStatus(error.status_code).phrase
        type_ = phrase.lower().replace(" ", "_")
        return problem(error.status_code, type_, phrase, str(error.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        translated = translate(error)
        if isinstance(translated, AppError):
            return app_problem(translated)
        if isinstance(error, sa_exc.SQLAlchemyError) and is_unavailable(error):
            return app_problem(Unavailable("the database is unreachable; retry shortly"))
        # The type only: a driver's message can quote the statement's values (content).
        logger.error(
            "unhandled error",
            extra={"path": request.url.path, "error_type": type(error).__name__},
        )
        return problem(500, "internal", "Internal error", "an unexpected error occurred")
