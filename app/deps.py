"""Request dependencies shared by every feature: the database, the settings, the archive worker,
the embedder.

Each is built once by the lifespan in ``main`` and read from the app state here; async, so a
request never hops to the thread pool to resolve them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.archives.worker import ArchiveWorker
from app.config import Settings
from app.db import Database
from app.memories.embedding import Embedder
from app.sessions.group_commit import GroupCommit


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


async def get_group_commit(request: Request) -> GroupCommit | None:
    """The process's group commit of appends, or ``None`` when it is switched off."""
    found: GroupCommit | None = request.app.state.group_commit
    return found


async def get_embedder(request: Request) -> Embedder:
    """The process's embedder (long-term memory): queries are embedded with it."""
    found: Embedder = request.app.state.embedder
    return found


DatabaseDep = Annotated[Database, Depends(get_database)]
GroupCommitDep = Annotated[GroupCommit | None, Depends(get_group_commit)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
WorkerDep = Annotated[ArchiveWorker, Depends(get_worker)]
EmbedderDep = Annotated[Embedder, Depends(get_embedder)]
