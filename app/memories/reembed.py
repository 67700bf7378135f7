"""``workmem memories reembed``: move a tenant's memories to the configured embedder, resumably.

An edge like the archive worker: it owns its transactions — a short read of one batch, the
embedding call with no transaction open, a short write that re-checks each memory's text — so a
crash loses at most one batch, and running it again continues where it stopped (it selects only
memories whose embedder is not the configured one).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from app.db import Database
from app.memories.embedding import Embedder
from app.memories.jobs import MemoryJobService
from app.usage.records import calls_for

DEFAULT_BATCH = 64


@dataclass(frozen=True, slots=True)
class ReembedReport:
    tenant_id: uuid.UUID
    embedding_model: str
    stale: int
    """Memories that were not embedded by ``embedding_model`` when the run started."""
    reembedded: int
    changed_meanwhile: int
    """Memories whose text changed between read and write; the next run re-embeds them."""


async def reembed(
    database: Database,
    embedder: Embedder,
    tenant_id: uuid.UUID,
    *,
    batch_size: int = DEFAULT_BATCH,
    started: Callable[[int], None] | None = None,
    advanced: Callable[[int], None] | None = None,
) -> ReembedReport:
    """Re-embed every memory of ``tenant_id`` made by another embedder, ``batch_size`` at a time.

    ``started`` receives the number of memories to do; ``advanced`` each batch's size.
    """
    model = embedder.identity
    async with database.tenant(tenant_id) as db:
        stale = await MemoryJobService(db, tenant_id).count_stale(model)
    if started is not None:
        started(stale)
    after: uuid.UUID | None = None
    written = changed = 0
    while True:
        async with database.tenant(tenant_id) as db:
            rows = await MemoryJobService(db, tenant_id).stale(model, after=after, limit=batch_size)
        if not rows:
            break
        with calls_for(tenant_id, purpose="embedding"):
            vectors = await embedder.embed([content for _, content in rows])
        async with database.tenant(tenant_id) as db:
            done = await MemoryJobService(db, tenant_id).store_embeddings(rows, vectors, model)
        written += done
        changed += len(rows) - done
        after = rows[-1][0]
        if advanced is not None:
            advanced(len(rows))
    return ReembedReport(tenant_id, model, stale, written, changed)
