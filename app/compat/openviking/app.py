"""The OpenViking-compatible API as a sub-application mounted at ``/api/v1``.

A sub-application so that every answer under the prefix, errors included (an unknown route, a
request that fails validation, a missing key, the database down, a crash), is OpenViking's
envelope, while ``/v1`` keeps answering problem+json. It shares the parent's state (database,
settings, authenticator, worker); it starts and stops nothing of its own.
"""

from __future__ import annotations

import logging
import re
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.compat.openviking.endpoints import router, tasks_router
from app.compat.openviking.envelope import (
    ErrorCode,
    app_error_response,
    code_for_status,
    error_response,
    validation_details,
)
from app.compat.openviking.tool_result_routes import router as tool_results_router
from app.errors import AppError, field_errors
from app.web.docs_pages import OfflineDocsPolicy
from app.web.errors import SubApps, unexpected_error
from app.web.links import Link, document_links
from app.web.problems import without_validation_422
from app.web.security import document_security

logger = logging.getLogger(__name__)

PREFIX = "/api/v1"

# A percent-encoded "/" or "\" would be decoded into the path before routing and could make
# "a%2Fcontext" reach another route; no identifier here may hold one, so it is refused first.
_ENCODED_SEPARATOR = re.compile(rb"%(2f|5c)", re.IGNORECASE)


class RefuseEncodedSeparators:
    """Pure ASGI middleware: ``INVALID_ARGUMENT`` for a path with an encoded path separator."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_path = bytes(scope.get("raw_path") or b"").split(b"?", 1)[0]
        if scope["type"] == "http" and _ENCODED_SEPARATOR.search(raw_path):
            response = error_response(
                ErrorCode.INVALID_ARGUMENT,
                "ids in the path cannot contain '/' or '\\': a session id is up to 255 "
                "characters of A-Z a-z 0-9 _ . @ -",
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class EnvelopeOnCrash:
    """Pure ASGI middleware: an error no handler took becomes what ``unexpected_error`` makes of
    it (``UNAVAILABLE`` when the database is unreachable, else ``INTERNAL``) in the envelope,
    and does not propagate."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as error:
            if started or scope["type"] != "http":
                raise
            response = app_error_response(unexpected_error(error, scope["path"]))
            await response(scope, receive, send)


def create_openviking_app() -> FastAPI:
    # Its /docs and /redoc serve Swagger UI and ReDoc from the package too: no CDN.
    api = FastAPIOffline(
        title="workmem: OpenViking-compatible API",
        version="0.1.0",
        summary="OpenViking's session API over workmem's working memory",
        static_url="/docs/static",
    )
    api.add_middleware(EnvelopeOnCrash)
    api.add_middleware(RefuseEncodedSeparators)
    api.add_middleware(OfflineDocsPolicy)

    @api.exception_handler(AppError)
    async def app_error(_: Request, error: AppError) -> JSONResponse:
        return app_error_response(error)

    @api.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        return error_response(
            ErrorCode.INVALID_ARGUMENT,
            "the request is not valid: see details.validation_errors",
            validation_details(field_errors(error.errors())),
        )

    @api.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = code_for_status(error.status_code)
        if code is ErrorCode.NOT_FOUND:
            return error_response(
                code,
                f"no such endpoint: {request.url.path}",
                {"resource": request.url.path, "type": "endpoint"},
            )
        return error_response(code, HTTPStatus(error.status_code).phrase)

    api.include_router(router)
    api.include_router(tasks_router)
    api.include_router(tool_results_router)
    without_validation_422(api)
    document_links(api, LINKS)
    document_security(api)
    return api


LINKS = (
    Link(
        "post",
        "/sessions",
        ("200",),
        "/sessions/",
        {"session_id": "$response.body#/result/session_id"},
    ),
    Link(
        "post",
        "/sessions/{session_id}/commit",
        ("200",),
        "/tasks/",
        {"task_id": "$response.body#/result/task_id"},
    ),
    Link(
        "post",
        "/sessions/{session_id}/commit",
        ("200",),
        "/sessions/{session_id}/archives/",
        {
            "session_id": "$request.path.session_id",
            "archive_id": "$response.body#/result/archive_id",
        },
    ),
)
"""Which answer feeds which operation, stated in the document (``app.web.links``)."""


def render_error(status: int, detail: str) -> JSONResponse:
    """An error the root answers on this API's behalf, in its envelope."""
    return error_response(code_for_status(status), detail)


def install(app: FastAPI, sub_apps: SubApps) -> None:
    """Mount the API at ``/api/v1`` on ``app``, sharing its state, register its error envelope
    with the root's renderer, and add the ``/health`` route OpenViking's clients check before
    anything else."""
    api = create_openviking_app()
    api.state = app.state
    app.mount(PREFIX, api)
    sub_apps.register(PREFIX, render_error)

    @app.get("/health", tags=["operations"])
    async def health() -> dict[str, str]:
        """OpenViking's liveness route (ours is ``/healthz``; both only say the process is up)."""
        return {"status": "ok"}
