"""Request dependencies shared by every feature: the database, the settings, the archive worker,
the embedder.

Each is built once by the lifespan in ``main`` and read from the app state here; async, so a
request never hops to the thread pool to resolve them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from app.archives.worker import ArchiveWorker
from app.config import Settings
from app.db import Database
from app.idempotency.keys import MAX_LENGTH, PATTERN, RequestKey, canonical_json, fingerprint
from app.memories.embedding import Embedder
from app.tenancy.auth import Writer


async def get_database(request: Request) -> Database:
    found: Database = request.app.state.database
    return found


async def get_settings(request: Request) -> Settings:
    found: Settings = request.app.state.settings
    return found


async def get_worker(request: Request) -> ArchiveWorker:
    """The process's archive worker: commits wake it, and ``wait`` drains through it."""
    found: ArchiveWorker = request.app.state.worker
    return found


async def get_embedder(request: Request) -> Embedder:
    """The process's embedder (long-term memory): queries are embedded with it."""
    found: Embedder = request.app.state.embedder
    return found


DatabaseDep = Annotated[Database, Depends(get_database)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
WorkerDep = Annotated[ArchiveWorker, Depends(get_worker)]
EmbedderDep = Annotated[Embedder, Depends(get_embedder)]


async def get_request_key(
    request: Request,
    principal: Writer,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=MAX_LENGTH,
            pattern=PATTERN,
            description="retry safely: a request sent again with the same key (within 24 h) "
            "gets the first answer, byte for byte, and stores nothing twice",
        ),
    ] = None,
) -> RequestKey | None:
    """The write's idempotency key and its request's fingerprint. The body is the route's,
    already parsed; it is compared as JSON (keys sorted, no spacing), so a retry serialised
    differently by another client library is still the same request."""
    if idempotency_key is None:
        return None
    raw = await request.body()
    body = canonical_json(await request.json()) if raw.strip() else b""
    return RequestKey(
        idempotency_key,
        fingerprint(
            method=request.method, path=request.url.path, user_id=principal.user_id, body=body
        ),
    )


RequestKeyDep = Annotated[RequestKey | None, Depends(get_request_key)]
