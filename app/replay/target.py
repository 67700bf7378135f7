"""Where a replay goes: the service in this process on a database, or a running server.

Owns building an HTTP client for either (the same requests reach the same endpoints, so replay
and evaluation have one code path), and the throwaway embedded database an evaluation runs on.
Never decides what is sent.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from app.archives.generation import WorkingMemoryGenerator
from app.config import Settings
from app.db import SERVICE_KEY_VARIABLE, Database, login_url, normalize_url
from app.tenancy import service as tenancy
from app.tenancy.principal import Role

REQUEST_TIMEOUT_S: Final = 300.0
"""A commit that waits processes the whole archive inside the request."""


@dataclass(frozen=True, slots=True)
class ServiceTarget:
    """A running service: its base URL and an API key that may write (writer or admin)."""

    base_url: str
    api_key: str


def _headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"}


def unreachable(target: ServiceTarget) -> str | None:
    """Why a replay cannot start against ``target``, as one line saying what to do; ``None``
    when its ``/v1`` answers and takes the key."""
    base = target.base_url.rstrip("/")
    probe = f"{base}/v1/sessions"
    try:
        answer = httpx.get(
            probe, params={"limit": 1}, headers=_headers(target.api_key), timeout=PROBE_TIMEOUT_S
        )
    except (httpx.InvalidURL, httpx.UnsupportedProtocol):
        return f"--url {target.base_url} is not an http(s) address: e.g. http://127.0.0.1:8000"
    except httpx.TransportError as error:
        said = str(error) or type(error).__name__
        return f"cannot reach {base} ({said}): start `workmem serve` there, or fix --url"
    if answer.status_code == 404:
        for suffix in ("/api/v1", "/v1"):
            if base.endswith(suffix):
                return (
                    f"--url is the server's address without {suffix}: "
                    f"--url {base.removesuffix(suffix)}"
                )
        return (
            f"{base} serves no workmem API (404 on {probe}): --url is the address "
            "`workmem serve` prints, e.g. http://127.0.0.1:8000"
        )
    if answer.status_code == 401:
        return (
            f"{base} refused the API key (401): pass --key with a key of that server "
            "(`workmem keys create`, or the local-api-key file `workmem serve` names)"
        )
    if answer.status_code >= 400:
        return f"{base} answered {answer.status_code} to GET /v1/sessions: is it a workmem server?"
    return None


PROBE_TIMEOUT_S: Final = 10.0


@asynccontextmanager
async def remote(target: ServiceTarget) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=target.base_url.rstrip("/"),
        headers=_headers(target.api_key),
        timeout=REQUEST_TIMEOUT_S,
    ) as http:
        yield http


@asynccontextmanager
async def in_process(
    settings: Settings, api_key: str, *, generator: WorkingMemoryGenerator | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """The app on ``settings.database_url``, in this process, without its background worker:
    a commit that waits processes its archive in the request. ``generator`` replaces the one
    the settings choose (the adversary evaluation's hostile models)."""
    from app.main import create_app

    app = create_app(settings.model_copy(update={"worker_enabled": False}), generator=generator)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://workmem.local",
            headers=_headers(api_key),
            timeout=REQUEST_TIMEOUT_S,
        ) as http,
    ):
        yield http


@dataclass(frozen=True, slots=True)
class ThrowawayDatabase:
    """A fresh embedded database, migrated, with one tenant and a writer key for it."""

    app_url: str
    api_key: str


@asynccontextmanager
async def throwaway_database() -> AsyncIterator[ThrowawayDatabase]:
    """A private Postgres cluster in a temporary directory, deleted afterwards."""
    from app import migrations

    with tempfile.TemporaryDirectory(prefix="workmem-eval-") as tmp:
        from app.embedded import postgres_server

        server = postgres_server(Path(tmp) / "pg", cleanup_mode="delete")
        try:
            server.psql('CREATE DATABASE "workmem";')
            admin = normalize_url(str(server.get_uri("workmem")))
            # Creating the tenant is work across tenants: it takes the service key, which the
            # migration registers and every connection of this process then carries.
            os.environ.setdefault(SERVICE_KEY_VARIABLE, secrets.token_urlsafe(32))
            migrations.upgrade(admin)
            app_url = login_url(admin)
            database = Database.from_url(app_url, pool_size=2)
            try:
                async with database.unscoped() as db:
                    tenant = await tenancy.create_tenant(db, "evaluation")
                    _, key = await tenancy.issue_key(db, tenant.tenant_id, role=Role.WRITER)
            finally:
                await database.dispose()
            yield ThrowawayDatabase(app_url, key)
        finally:
            server.cleanup()
