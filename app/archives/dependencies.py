"""Request dependencies of the archives feature: the process's archive worker."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.archives.worker import ArchiveWorker
from app.web.state import Slot

WORKER = Slot[ArchiveWorker]("worker")
"""The process's archive worker: commits wake it, and ``wait`` drains through it."""

WorkerDep = Annotated[ArchiveWorker, Depends(WORKER.read)]
