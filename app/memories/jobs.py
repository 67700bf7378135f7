"""The write of an archive's memory changes, inside the archive's own phase-2 transaction.

Owns applying prepared candidates in order: the stored memories that bear on them are read in
one statement, ``changes.decide`` says ADD, UPDATE or SUPERSEDE for each as the earlier ones of
the batch left the memories (``batch``), the rows change in a few statements and every change is
a ``memory_events`` row naming the archive and message seqs it came from; together they are one
``memory.changed`` webhook event in the outbox. A memory of a category the tenant's retention
policy gives a lifetime expires that many days after it was last stated. Writes of one user are
serialised by a transaction-level advisory lock. Never embeds or calls a model (``extraction``
did, with no transaction open) and never commits (the archive job owns the transaction).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.lifecycle.retention_service import memory_lifetimes
from app.memories.batch import Batch, NeedMore
from app.memories.changes import SLOTTED_CATEGORIES
from app.memories.extraction import Prepared
from app.memories.policy import EVERYTHING, EffectivePolicy
from app.memories.records import Candidate, EventKind, MemoryReport, Source
from app.memories.repository import MemoryRepository
from app.memories.store import MemoryStore, Wanted, vector_text
from app.tenancy.principal import Scope
from app.webhooks.events import MEMORY_CHANGED, memory_data
from app.webhooks.outbox import WebhookOutbox


class MemoryJobService:
    """What phase 2 writes for long-term memory, under the claimed archive's tenant."""

    def __init__(self, db: AsyncSession, tenant_id: uuid.UUID) -> None:
        self.db = db
        self.tenant_id = tenant_id
        self.store = MemoryStore(db, Scope(tenant_id))
        self.memories = MemoryRepository(db, Scope(tenant_id))
        self.outbox = WebhookOutbox(db, tenant_id)

    async def apply(
        self, prepared: Prepared, source: Source, policy: EffectivePolicy = EVERYTHING
    ) -> MemoryReport:
        """Store ``prepared``'s candidates of the categories ``policy`` allows for ``source``;
        the report says what happened (candidates of other categories are counted as skipped,
        reason ``not_allowed``)."""
        if prepared.failed is not None or not prepared.extraction.candidates:
            return prepared.report()
        pairs = list(zip(prepared.extraction.candidates, prepared.vectors, strict=True))
        allowed = [(c, v) for c, v in pairs if policy.allows(c.category)]
        not_allowed = len(pairs) - len(allowed)
        if not allowed:
            return prepared.report(not_allowed=not_allowed)
        await self.store.lock_user(source.user_id)
        lifetimes = await memory_lifetimes(self.db, self.tenant_id)
        counts = {EventKind.ADD: 0, EventKind.UPDATE: 0, EventKind.SUPERSEDE: 0}
        actor = f"extractor:{prepared.extraction.extractor}"
        events: list[dict[str, Any]] = []
        model = prepared.embedding_model
        # Each vector written out once: the lookup and the write bind the same text.
        texts = [vector_text(vector) for _, vector in allowed]
        batch = await self._look_up(source.user_id, model, allowed, texts)
        for index, (candidate, _) in enumerate(allowed):
            category = candidate.category.value
            while True:
                try:
                    change, nearest = batch.decide(index, prepared.duplicate_similarity)
                    break
                except NeedMore as more:
                    # Every memory found for it was changed by the batch: look further.
                    found, _, _ = await self.store.find(
                        source.user_id,
                        model,
                        [(index, category, None, batch.found[index].depth, texts[index])],
                        leaving_out=sorted(more.changed),
                    )
                    batch.more(index, found[index].nearest)
            values = _values(candidate, source, texts[index], model)
            days = lifetimes.get(category)
            memory_id = batch.apply(index, change, values, days)
            event = {
                "user_id": source.user_id,
                "event": change.kind.value,
                "new_content": candidate.content,
                "agent_session_id": source.agent_session_id,
                "archive_seq": source.archive_seq,
                "source_seqs": list(candidate.source_seqs),
                "actor": actor,
                "details": {
                    "reason": change.reason,
                    "category": category,
                    "rule": candidate.rule,
                    "confidence": candidate.confidence,
                    "nearest_similarity": None if nearest is None else round(nearest.similarity, 4),
                },
            }
            counts[change.kind] += 1
            if change.target is not None:
                # A restatement keeps the higher confidence and takes the newest wording and
                # provenance: the memory now says what its newest source said.
                events.append(
                    {**event, "memory_id": memory_id, "old_content": change.target.content}
                )
            elif not change.superseded:
                events.append({**event, "memory_id": memory_id})
            else:
                events += [
                    {
                        **event,
                        "memory_id": memory_id,
                        "related_memory_id": row.memory_id,
                        "old_content": row.content,
                    }
                    for row in change.superseded
                ]
        await self.store.write(source.user_id, batch.written())
        await self.store.insert_events(events)
        # In the archive's transaction (and its savepoint): the event exists iff the changes do.
        if events:
            await self.outbox.emit(
                MEMORY_CHANGED,
                memory_data(
                    user_id=source.user_id,
                    agent_session_id=source.agent_session_id,
                    archive_seq=source.archive_seq,
                    changes=[(event["event"], event["memory_id"]) for event in events],
                ),
            )
        return prepared.report(
            added=counts[EventKind.ADD],
            updated=counts[EventKind.UPDATE],
            superseded=counts[EventKind.SUPERSEDE],
            not_allowed=not_allowed,
        )

    async def _look_up(
        self,
        user_id: str | None,
        model: str,
        allowed: Sequence[tuple[Candidate, list[float]]],
        texts: Sequence[str],
    ) -> Batch:
        """One statement for every candidate's lookups: a candidate is decided against the
        memories as the earlier ones of its category left them, so it needs one nearest stored
        memory more than there are earlier candidates of its category."""
        earlier: Counter[str] = Counter()
        wanted: list[Wanted] = []
        for index, (candidate, _) in enumerate(allowed):
            category = candidate.category.value
            earlier[category] += 1
            slotted = candidate.slot is not None and candidate.category in SLOTTED_CATEGORIES
            slot = candidate.slot if slotted else None
            wanted.append((index, category, slot, earlier[category], texts[index]))
        found, distances, now = await self.store.find(user_id, model, wanted)
        return Batch([candidate for candidate, _ in allowed], found, distances, now)

    async def count_stale(self, model: str) -> int:
        """Memories of the tenant not embedded by ``model``."""
        return await self.store.count_stale(model)

    async def stale(
        self, model: str, *, after: uuid.UUID | None, limit: int
    ) -> list[tuple[uuid.UUID, str]]:
        return await self.store.stale(model, after=after, limit=limit)

    async def store_embeddings(
        self, rows: Sequence[tuple[uuid.UUID, str]], vectors: Sequence[list[float]], model: str
    ) -> int:
        """Write re-computed vectors; a memory whose text changed meanwhile keeps its old one
        (the next run picks it up). Returns how many were written."""
        written = 0
        for (memory_id, content), vector in zip(rows, vectors, strict=True):
            written += await self.store.set_embedding(memory_id, content, vector, model)
        return written


def _values(candidate: Candidate, source: Source, vector: str, model: str) -> dict[str, Any]:
    return {
        "content": candidate.content,
        "confidence": candidate.confidence,
        "slot": candidate.slot,
        "slot_value": candidate.slot_value,
        "agent_session_id": source.agent_session_id,
        "agent_id": source.agent_id,
        "archive_seq": source.archive_seq,
        "source_seqs": list(candidate.source_seqs),
        "embedding": vector,
        "embedding_model": model,
    }
