"""Composition root: ``create_app(settings)`` wires the database, authentication and routers.

Owns the lifespan (engine and background work start and stop here), the one place that renders
errors as problem+json, and the health endpoints. Holds no feature logic.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi_offline import FastAPIOffline
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import metrics
from app.archives.endpoints import router as archives_router
from app.archives.generation import WorkingMemoryGenerator
from app.archives.worker import ArchiveWorker, WorkerConfig
from app.audit.endpoints import install as install_audit_pages
from app.compat.openviking.app import PREFIX as OPENVIKING_PREFIX
from app.compat.openviking.app import install as install_openviking_api
from app.compat.openviking.envelope import ErrorCode, code_for_status
from app.compat.openviking.envelope import error_response as openviking_error
from app.config import Settings
from app.context.endpoints import router as context_router
from app.db import Bounds, Database, is_unavailable, translate
from app.errors import AppError, PayloadTooLarge, RequestTimeout, Unavailable, field_errors
from app.history.endpoints import router as history_router
from app.limits.service import LimitConfig, TenantLimits
from app.llm.instrumented import InstrumentedChatModel
from app.llm.ports import ChatModel
from app.memories.embedding import Embedder
from app.memories.endpoints import router as memories_router
from app.memories.extraction import MemoryExtractor
from app.memories.hashing import HashingEmbedder
from app.memories.service import embedder_problem
from app.migrations import head_revision
from app.observability import ObserveRequests
from app.pins.endpoints import router as pins_router
from app.sessions.endpoints import router as sessions_router
from app.sessions.group_commit import GroupCommit
from app.tenancy import service as tenancy
from app.tenancy.auth import Authenticator
from app.tenancy.endpoints import keys_router
from app.tenancy.endpoints import router as admin_router
from app.web.links import Link, document_links
from app.web.problems import document_problems, problems
from app.web.requests import BodyGuard
from app.webhooks.delivery import DeliveryConfig, WebhookDeliverer
from app.webhooks.endpoints import router as webhooks_router
from app.webhooks.schedule import RetrySchedule
from app.wm.thresholds import GuardConfig

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


def build_generator(settings: Settings) -> WorkingMemoryGenerator:
    """The model provider chosen by configuration; the offline extractor when there is none."""
    chat: ChatModel | None = None
    if settings.use_openai:
        from app.llm.openai_provider import OpenAIChatModel

        chat = InstrumentedChatModel(
            OpenAIChatModel(
                base_url=settings.llm_base_url or "https://api.openai.com/v1",
                api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else "",
                model=settings.llm_model,
                timeout_s=settings.llm_timeout_s,
                max_retries=settings.llm_max_retries,
            )
        )
    return WorkingMemoryGenerator(
        chat,
        fallback=settings.llm_fallback,
        max_input_tokens=settings.llm_max_input_tokens,
        config=guard_config(settings),
    )


def guard_config(settings: Settings) -> GuardConfig:
    """The guard thresholds of DESIGN 3.5 from ``WORKMEM_GUARD_*`` settings."""
    prefix = "guard_"
    values = {
        name[len(prefix) :]: value
        for name, value in settings.model_dump().items()
        if name.startswith(prefix)
    }
    return GuardConfig(**values)


def build_worker(
    settings: Settings,
    database: Database,
    generator: WorkingMemoryGenerator,
    memories: MemoryExtractor | None,
) -> ArchiveWorker:
    """A worker; ``memories`` is the long-term memory extractor (``None``: extraction off)."""
    return ArchiveWorker(
        database,
        generator,
        WorkerConfig(
            lease_s=settings.worker_lease_s,
            max_attempts=settings.worker_max_attempts,
            poll_s=settings.worker_poll_s,
            backoff_base_s=settings.worker_backoff_base_s,
            backoff_max_s=settings.worker_backoff_max_s,
            idempotency_ttl_s=settings.idempotency_ttl_s,
        ),
        memories=memories,
    )


# --- long-term memory: the embedder and the memory extractor ----------------------------------


class EmbedderMismatch(RuntimeError):
    """The configured embedder cannot write into this database's ``memories.embedding``."""


def build_embedder(settings: Settings) -> Embedder:
    """The embedder chosen by configuration; the offline ``hashing`` one by default."""
    if settings.embedding_provider == "openai":
        from app.memories.openai_embedder import OpenAIEmbedder

        key = settings.embedding_api_key or settings.llm_api_key
        return OpenAIEmbedder(
            base_url=settings.embedding_base_url
            or settings.llm_base_url
            or "https://api.openai.com/v1",
            api_key=key.get_secret_value() if key else "",
            model=settings.embedding_model,
            dim=settings.embedder_dim,
            dimensions=settings.embedding_dimensions,
            timeout_s=settings.embedding_timeout_s,
            max_retries=settings.embedding_max_retries,
        )
    return HashingEmbedder(settings.embedding_dim)


def build_memory_extractor(
    settings: Settings, generator: WorkingMemoryGenerator, embedder: Embedder
) -> MemoryExtractor | None:
    """Phase 2's memory extractor (``None`` when extraction is off): the model behind the
    working-memory generator when it has one and configuration asks for it, else the rules."""
    from app.memories.candidates import ValueConfig

    mode = settings.memory_mode
    if mode == "off":
        return None
    chat = generator.chat if mode == "model" else None
    return MemoryExtractor(
        embedder,
        chat=chat,
        mode="model" if chat is not None else "rules",
        fallback="rules" if settings.llm_fallback == "offline" else "none",
        value=ValueConfig(min_confidence=settings.memory_min_confidence),
        max_input_tokens=settings.llm_max_input_tokens,
        duplicate_similarity=settings.memory_duplicate_similarity,
    )


async def check_embedder(database: Database, embedder: Embedder) -> None:
    """Refuse an embedder whose dimension is not the column's, with both named."""
    async with database.unscoped() as db:
        problem = await embedder_problem(db, embedder)
    if problem is not None:
        raise EmbedderMismatch(problem)


async def close_embedder(embedder: Embedder) -> None:
    from app.memories.openai_embedder import OpenAIEmbedder

    if isinstance(embedder, OpenAIEmbedder):
        await embedder.close()


# --- webhooks: the delivery loop -------------------------------------------------------------


def build_deliverer(settings: Settings, database: Database) -> WebhookDeliverer:
    """The webhook delivery loop with the ``WORKMEM_WEBHOOKS_*`` settings."""
    return WebhookDeliverer(
        database,
        DeliveryConfig(
            poll_s=settings.webhooks_poll_s,
            lease_s=settings.webhooks_lease_s,
            batch=settings.webhooks_batch,
            timeout_s=settings.webhooks_timeout_s,
            allow_private=settings.webhooks_allow_private,
            schedule=RetrySchedule(
                max_attempts=settings.webhooks_max_attempts,
                base_s=settings.webhooks_backoff_base_s,
                max_s=settings.webhooks_backoff_max_s,
            ),
        ),
    )


def create_app(
    settings: Settings | None = None,
    *,
    database: Database | None = None,
    generator: WorkingMemoryGenerator | None = None,
) -> FastAPI:
    """Build the ASGI app. ``settings.database_url`` must be resolved (see ``app.cli``)."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = database is None
        if database is not None:
            app.state.database = database
        else:
            if not settings.database_url:
                raise RuntimeError(
                    "no database URL: start through `workmem serve` or set DATABASE_URL"
                )
            app.state.database = Database.from_url(
                settings.database_url,
                pool_size=settings.pool_size,
                bounds=Bounds.from_settings(settings),
            )
        try:
            await app.state.database.check_login()
        except Unavailable:
            # Serving 503 until the database returns is better than not starting; `workmem
            # serve` and `workmem worker` check the login before they start anyway.
            logger.warning("database unreachable at start: its login was not checked")
        await app.state.database.open()
        app.state.group_commit = (
            GroupCommit(app.state.database, max_batch=settings.group_commit_max_batch)
            if settings.group_commit
            else None
        )
        app.state.settings = settings
        app.state.limits = TenantLimits(LimitConfig.from_settings(settings))
        app.state.authenticator = Authenticator(app.state.database, settings)
        app.state.embedder = build_embedder(settings)
        try:
            await check_embedder(app.state.database, app.state.embedder)
        except Unavailable:
            # The service starts with the database down and recovers when it returns; /readyz
            # repeats the check and stays 503 while the embedder does not fit.
            logger.warning("the embedder's dimension could not be checked: database unreachable")
        chosen = generator or build_generator(settings)
        memories = build_memory_extractor(settings, chosen, app.state.embedder)
        worker = build_worker(settings, app.state.database, chosen, memories)
        app.state.worker = worker
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run_alone(stop)) if settings.worker_enabled else None
        # Webhooks are delivered where the archive worker runs (serve without it leaves them
        # to `workmem worker`); any number of loops may run, each claim is its own.
        deliverer = None
        if settings.worker_enabled and settings.webhooks_delivery:
            deliverer = build_deliverer(settings, app.state.database)
        delivering = None if deliverer is None else asyncio.create_task(deliverer.run(stop))
        try:
            yield
        finally:
            stop.set()
            if task is not None:
                await task
            if deliverer is not None and delivering is not None:
                await delivering
                await deliverer.close()
            await worker.close()
            if app.state.group_commit is not None:
                await app.state.group_commit.close()
            await close_embedder(app.state.embedder)
            if owned:
                await app.state.database.dispose()

    # /docs and /redoc load Swagger UI and ReDoc from files the service serves itself: no CDN.
    app = FastAPIOffline(
        title="workmem",
        version="0.1.0",
        summary="Working memory for long AI agent sessions, on Postgres",
        lifespan=lifespan,
        static_url="/docs/static",
    )
    app.add_middleware(
        BodyGuard,
        max_bytes=settings.max_body_bytes,
        idle_s=settings.body_idle_timeout_s,
        total_s=settings.body_timeout_s,
        refuse=too_large,
    )
    app.add_middleware(ObserveRequests)
    install_error_handlers(app)
    document_problems(app)
    document_links(app, V1_LINKS)
    app.include_router(admin_router)
    app.include_router(keys_router)
    app.include_router(sessions_router)
    app.include_router(archives_router)
    app.include_router(context_router)
    # The audit pages (/ui) and their stylesheet.
    install_audit_pages(app)
    app.include_router(memories_router)
    # Webhook subscriptions (tenant admin keys).
    app.include_router(webhooks_router)
    # Pins and history search (DESIGN 18).
    app.include_router(pins_router)
    app.include_router(history_router)

    # The OpenViking-compatible API under /api/v1, with its own envelope errors (and /health).
    install_openviking_api(app, is_unavailable=is_unavailable)

    @app.get("/healthz", tags=["operations"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"], response_model=None, responses=problems(503))
    async def readyz(request: Request) -> dict[str, str] | JSONResponse:
        db_: Database = request.app.state.database
        # The check runs as a task of its own, so the answer never waits longer than the
        # bound, even when a frozen server leaves the check (or its cleanup) hanging.
        check = asyncio.ensure_future(_readiness(db_, request.app.state.embedder))
        check.add_done_callback(_consume)
        try:
            current, embedder_mismatch = await asyncio.wait_for(
                asyncio.shield(check), timeout=READY_TIMEOUT_S
            )
        except TimeoutError:
            return problem(
                503,
                "not_ready",
                "Not ready",
                f"the database did not answer within {READY_TIMEOUT_S:g} s",
                retry_after_s=1,
            )
        except (Unavailable, sa_exc.SQLAlchemyError):
            return problem(
                503, "not_ready", "Not ready", "the database is unreachable", retry_after_s=1
            )
        head = head_revision()
        if current != head:
            return problem(
                503, "not_ready", "Not ready", f"migrations at {current}, expected {head}"
            )
        if embedder_mismatch is not None:
            return problem(503, "not_ready", "Not ready", embedder_mismatch)
        return {"status": "ready", "revision": str(current)}

    @app.get("/metrics", tags=["operations"], response_class=Response)
    async def metrics_text(request: Request) -> Response:
        """Prometheus metrics of this process (plus the archive queue, read at scrape)."""
        body, content_type = await metrics.exposition(request.app.state.database)
        return Response(body, media_type=content_type)

    return app


V1_LINKS = (
    Link(
        "post",
        "/v1/sessions",
        ("201",),
        "/v1/sessions/",
        {"agent_session_id": "$response.body#/id"},
    ),
    Link(
        "post",
        "/v1/sessions/{agent_session_id}/commit",
        ("202",),
        "/v1/sessions/{agent_session_id}/archives/",
        {
            "agent_session_id": "$request.path.agent_session_id",
            "archive_seq": "$response.body#/archive/archive_seq",
        },
    ),
    Link("post", "/v1/keys", ("201",), "/v1/keys/", {"api_key_id": "$response.body#/api_key_id"}),
    Link(
        "post",
        "/v1/admin/tenants",
        ("201",),
        "/v1/admin/tenants/",
        {"tenant_id": "$response.body#/tenant_id"},
    ),
    Link(
        "post",
        "/v1/admin/tenants/{tenant_id}/api-keys",
        ("201",),
        "/v1/admin/api-keys/",
        {"api_key_id": "$response.body#/api_key_id"},
    ),
)
"""Which answer feeds which operation, stated in the document (``app.web.links``)."""

READY_TIMEOUT_S = 1.0
"""The longest ``/readyz`` takes to answer."""


def _consume(task: asyncio.Future[Any]) -> None:
    """A readiness check answered after its deadline: its outcome is no one's anymore."""
    if not task.cancelled():
        task.exception()


async def _readiness(database: Database, embedder: Embedder) -> tuple[str | None, str | None]:
    """The schema's revision, and why the embedder cannot serve it (``None`` when it can)."""
    try:
        async with database.unscoped() as db:
            return await tenancy.schema_revision(db), await embedder_problem(db, embedder)
    except sa_exc.ProgrammingError:
        # The readiness function itself is missing: the schema predates it.
        return "an older revision", None
