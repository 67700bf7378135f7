"""The duplicate lookup of phase 2 on the filtered-search data: recall and p50 of
``MemoryStore.find``, the statement a batch of extracted memories is decided against (each
candidate's nearest current memories of its user's category), beside a big tenant.

Memory search chooses between exact and index search per query because a filter can hide the
rows an HNSW scan returns. The lookup always names one user and one category, so it is a
filtered nearest-neighbour query too: if the planner served it from the HNSW index, a small
user's duplicate would be missed and a fact stored twice or left uncontradicted. Measured on
the rows ``bench/filtered_search.py`` loads, as the app's login in the tenant's transaction,
against exact search over the same rows (index scans off, as the owner). Run as part of that
benchmark; its rows are ``bench/table_rows.py``'s ``duplicate_lookup_rows``.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
from pgvector import Vector

from app.db import Database
from app.memories.store import MemoryStore, vector_text
from app.tenancy.principal import Scope

DEPTH = 3
"""How many nearest memories the lookup asks for: the third candidate of one category in a
batch needs three (``MemoryJobs``'s ``depth``)."""


@dataclass(frozen=True)
class LookupCase:
    name: str
    tenant: str
    user_id: str
    category: str


LOOKUP_CASES = (
    LookupCase("big tenant, user 5 %, category 35 %", "big", "user-5pct", "preference"),
    LookupCase("big tenant, user 0.5 %, category 35 %", "big", "user-0.5pct", "preference"),
    LookupCase("big tenant, user 5 %, category 5 %", "big", "user-5pct", "lesson"),
    LookupCase("small tenant, one user, category 35 %", "small", "user-3", "preference"),
)

EXACT = (
    "SELECT memory_id FROM memories WHERE tenant_id = %s AND user_id = %s AND category = %s"
    " AND embedding_model = %s AND superseded_by IS NULL ORDER BY embedding <=> %s LIMIT %s"
)


def exact_nearest(
    connection: psycopg.Connection[Any],
    tenant_id: uuid.UUID,
    case: LookupCase,
    model: str,
    vector: list[float],
) -> list[Any]:
    with connection.transaction():
        connection.execute("SET LOCAL enable_indexscan = off")
        connection.execute("SET LOCAL enable_indexonlyscan = off")
        rows = connection.execute(
            EXACT, (tenant_id, case.user_id, case.category, model, Vector(vector), DEPTH)
        ).fetchall()
    return [row[0] for row in rows]


async def lookup_cases(
    connection: psycopg.Connection[Any],
    database: Database,
    tenants: dict[str, uuid.UUID],
    vectors: list[list[float]],
    model: str,
) -> dict[str, Any]:
    """Each case's mean recall@``DEPTH`` and p50 over ``vectors`` (the first few untimed)."""
    report: dict[str, Any] = {}
    for case in LOOKUP_CASES:
        tenant_id = tenants[case.tenant]
        scope = Scope(tenant_id=tenant_id)
        seconds: list[float] = []
        recalls: list[float] = []
        for number, vector in enumerate(vectors):
            truth = set(exact_nearest(connection, tenant_id, case, model, vector))
            started = time.perf_counter()
            async with database.tenant(tenant_id) as db:
                found, _, _ = await MemoryStore(db, scope).find(
                    case.user_id, model, [(0, case.category, None, DEPTH, vector_text(vector))]
                )
            elapsed = time.perf_counter() - started
            if number < 5:  # warm-up
                continue
            seconds.append(elapsed)
            got = {stored.memory_id for stored in found[0].nearest}
            recalls.append(len(truth & got) / max(1, len(truth)))
        report[case.name] = {
            "recall_at_3": round(statistics.mean(recalls), 4),
            "p50_ms": round(statistics.median(seconds) * 1000, 3),
        }
    return report


def lookup_vectors(count: int, unit_vector: Any) -> list[list[float]]:
    """``count`` query vectors of their own seed (not the search's queries)."""
    rng = random.Random(3)
    vectors: list[list[float]] = [unit_vector(rng) for _ in range(count)]
    return vectors
