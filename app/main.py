"""Composition root: ``create_app(settings)`` wires the database, authentication and routers.

Owns the lifespan (engine and background work start and stop here) and the health endpoints;
errors are rendered by ``app.web.errors``, what configuration builds by ``app.wiring``. Holds no
feature logic.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from fastapi_offline import FastAPIOffline
from sqlalchemy import exc as sa_exc

from app import metrics, telemetry
from app.archives.dependencies import WORKER
from app.archives.endpoints import router as archives_router
from app.archives.generation import WorkingMemoryGenerator
from app.audit.endpoints import install as install_audit_pages
from app.audit.history import router as section_history_router
from app.compat.openviking.app import install as install_openviking_api
from app.config import Settings
from app.context.endpoints import router as context_router
from app.db import Bounds, Database
from app.deps import DATABASE, SETTINGS
from app.errors import Unavailable
from app.ledger.endpoints import router as ledger_router
from app.lifecycle.endpoints import router as lifecycle_router
from app.lifecycle.erasure_endpoints import router as erasure_router
from app.lifecycle.retention_endpoints import router as retention_router
from app.limits.service import LimitConfig, TenantLimits
from app.memories.dependencies import EMBEDDER
from app.memories.embedding import Embedder
from app.memories.endpoints import router as memories_router
from app.memories.policy_endpoints import router as memory_policy_router
from app.memories.service import embedder_problem
from app.message_search.endpoints import router as message_search_router
from app.migrations import head_revision
from app.observability import ObserveRequests
from app.pins.endpoints import router as pins_router
from app.sessions.appending import AppendFlow
from app.sessions.dependencies import APPEND_FLOW
from app.sessions.endpoints import router as sessions_router
from app.sessions.group_commit import GroupCommit
from app.sessions.prepare import Limits
from app.tenancy import service as tenancy
from app.tenancy.auth import AUTHENTICATOR, Authenticator
from app.tenancy.endpoints import keys_router
from app.tenancy.endpoints import router as admin_router
from app.usage.endpoints import router as usage_router
from app.usage.recorder import UsageRecorder
from app.web.docs_pages import OfflineDocsPolicy
from app.web.errors import SubApps, install_error_handlers, problem
from app.web.json_bodies import BodiesAreJson
from app.web.landing import install_landing
from app.web.links import Link, document_links
from app.web.problems import document_problems, problems
from app.web.requests import BodyGuard
from app.web.security import document_security
from app.webhooks.endpoints import router as webhooks_router
from app.wiring import (
    build_deliverer,
    build_embedder,
    build_generator,
    build_memory_extractor,
    build_preparer,
    build_worker,
    check_embedder,
    close_embedder,
)

logger = logging.getLogger(__name__)


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
        # Everything built here is kept in a typed slot of the app's state (``app.web.state``)
        # declared beside the feature that reads it.
        owned = database is None
        # OpenTelemetry, when configured (WORKMEM_OTEL_*, OTEL_EXPORTER_OTLP_*).
        owns_telemetry = telemetry.start(settings)
        if database is not None:
            db_ = database
        else:
            if not settings.database_url:
                raise RuntimeError(
                    "no database URL: start through `workmem serve` or set DATABASE_URL"
                )
            db_ = Database.from_url(
                settings.database_url,
                pool_size=settings.pool_size,
                bounds=Bounds.from_settings(settings),
            )
        DATABASE.put(app, db_)
        try:
            await db_.check_login()
        except Unavailable:
            # Serving 503 until the database returns is better than not starting; `workmem
            # serve` and `workmem worker` check the login before they start anyway.
            logger.warning("database unreachable at start: its login was not checked")
        await db_.open()
        group_commit = (
            GroupCommit(db_, max_batch=settings.group_commit_max_batch)
            if settings.group_commit
            else None
        )
        SETTINGS.put(app, settings)
        AUTHENTICATOR.put(app, Authenticator(db_, settings))
        # Every model and embedding call becomes a usage row, written in the background.
        usage = UsageRecorder(db_)
        embedder = build_embedder(settings, usage.record)
        EMBEDDER.put(app, embedder)
        try:
            await check_embedder(db_, embedder)
        except Unavailable:
            # The service starts with the database down and recovers when it returns; /readyz
            # repeats the check and stays 503 while the embedder does not fit.
            logger.warning("the embedder's dimension could not be checked: database unreachable")
        chosen = generator or build_generator(settings, usage.record)
        memories = build_memory_extractor(settings, chosen, embedder)
        worker = build_worker(settings, db_, chosen, memories)
        WORKER.put(app, worker)
        preparer = build_preparer(settings, db_, chosen, memories)
        APPEND_FLOW.put(
            app,
            AppendFlow(
                db_,
                Limits.from_settings(settings),
                TenantLimits(LimitConfig.from_settings(settings)),
                group_commit,
                None if preparer is None else preparer.moved,
            ),
        )
        stop = asyncio.Event()
        preparing = None if preparer is None else asyncio.create_task(preparer.run(stop))
        recording = asyncio.create_task(usage.run(stop))
        task = asyncio.create_task(worker.run_alone(stop)) if settings.worker_enabled else None
        # Webhooks are delivered where the archive worker runs (serve without it leaves them
        # to `workmem worker`); any number of loops may run, each claim is its own.
        deliverer = None
        if settings.worker_enabled and settings.webhooks_delivery:
            deliverer = build_deliverer(settings, db_)
        delivering = None if deliverer is None else asyncio.create_task(deliverer.run(stop))
        try:
            yield
        finally:
            stop.set()
            if task is not None:
                await task
            if preparing is not None:
                await preparing
            if deliverer is not None and delivering is not None:
                await delivering
                await deliverer.close()
            await worker.close()
            if group_commit is not None:
                await group_commit.close()
            await close_embedder(embedder)
            await recording
            await usage.close()
            if owned:
                await db_.dispose()
            if owns_telemetry:
                telemetry.stop()

    # /docs and /redoc load Swagger UI and ReDoc from files the service serves itself: no CDN.
    app = FastAPIOffline(
        title="workmem",
        version="0.1.0",
        summary="Working memory for long AI agent sessions, on Postgres",
        lifespan=lifespan,
        static_url="/docs/static",
    )
    sub_apps = SubApps()
    app.add_middleware(
        BodyGuard,
        max_bytes=settings.max_body_bytes,
        idle_s=settings.body_idle_timeout_s,
        total_s=settings.body_timeout_s,
        refuse=sub_apps.too_large,
    )
    app.add_middleware(ObserveRequests)
    app.add_middleware(OfflineDocsPolicy)
    app.add_middleware(BodiesAreJson)
    install_error_handlers(app, sub_apps)
    document_problems(app)
    document_links(app, V1_LINKS)
    document_security(app)
    install_landing(app)
    app.include_router(admin_router)
    app.include_router(keys_router)
    app.include_router(sessions_router)
    app.include_router(archives_router)
    # The working-memory section history, beside the audit pages that show it.
    app.include_router(section_history_router)
    app.include_router(context_router)
    app.include_router(ledger_router)
    # The audit pages (/ui) and their stylesheet.
    install_audit_pages(app)
    app.include_router(memories_router)
    # A user's default memory policy (tenant admin keys).
    app.include_router(memory_policy_router)
    # Webhook subscriptions (tenant admin keys).
    app.include_router(webhooks_router)
    # Pins and message search (DESIGN 18).
    app.include_router(pins_router)
    app.include_router(message_search_router)
    # Redaction (the data lifecycle).
    app.include_router(lifecycle_router)
    app.include_router(erasure_router)
    app.include_router(retention_router)
    # What the models cost (tenant admin keys).
    app.include_router(usage_router)

    # The OpenViking-compatible API under /api/v1, with its own envelope errors (and /health).
    install_openviking_api(app, sub_apps)

    @app.get("/healthz", tags=["operations"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"], response_model=None, responses=problems(503))
    async def readyz(request: Request) -> dict[str, str] | JSONResponse:
        db_ = DATABASE.get(request.app)
        # The check runs as a task of its own, so the answer never waits longer than the
        # bound, even when a frozen server leaves the check (or its cleanup) hanging.
        check = asyncio.ensure_future(_readiness(db_, EMBEDDER.get(request.app)))
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
        body, content_type = await metrics.exposition(DATABASE.get(request.app))
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
