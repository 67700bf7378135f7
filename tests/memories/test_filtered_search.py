"""Vector search under filters, on a real table where one tenant is far bigger than another: the
small tenant, and a small user of the big one, get their exact top 10."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector

from app.db import Database
from app.memories.service import MemoryQuery, MemoryService
from app.tenancy.principal import Principal, Role
from tests.support.memory_rows import memory_source
from tests.support.postgres import DatabaseUrls

DIM = 384
MODEL = f"test-random:v1:{DIM}"
BIG = 8_000
SMALL = 1_500
SMALL_USER = 1_000


def random_vector(rng: random.Random) -> list[float]:
    return [rng.gauss(0.0, 1.0) for _ in range(DIM)]


def load(plain_url: str) -> dict[str, uuid.UUID]:
    """A big tenant (a few hundred of its rows are one user's) and a small one, then ANALYZE."""
    rng = random.Random(5)
    tenants: dict[str, uuid.UUID] = {}
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    with psycopg.connect(plain_url) as connection:
        register_vector(connection)
        # Built after the load, as for a bulk import (faster than growing it row by row).
        connection.execute("DROP INDEX ix_memories_embedding")
        for name, count in (("big", BIG), ("small", SMALL)):
            tenant_id, source = memory_source(connection, name)
            with connection.cursor().copy(
                "COPY memories (tenant_id, user_id, category, content, confidence,"
                " agent_session_id, archive_seq, embedding, embedding_model, created_at,"
                " updated_at) FROM STDIN"
            ) as copy:
                for n in range(count):
                    user = "small-user" if name == "big" and n < SMALL_USER else f"u{n % 50}"
                    copy.write_row(
                        (tenant_id, user, "event", f"memory {n}", 0.8, source, 1,
                         Vector(random_vector(rng)), MODEL, moment, moment)
                    )  # fmt: skip
            tenants[name] = tenant_id
        connection.execute(
            "CREATE INDEX ix_memories_embedding ON memories"
            " USING hnsw (embedding vector_cosine_ops)"
        )
        connection.execute("ANALYZE memories")
    return tenants


def exact_top(
    plain_url: str, tenant_id: uuid.UUID, user_id: str | None, vector: list[float]
) -> list[uuid.UUID]:
    with psycopg.connect(plain_url) as connection:
        register_vector(connection)
        connection.execute("SET enable_indexscan = off")
        rows = connection.execute(
            "SELECT memory_id FROM memories WHERE tenant_id = %s"
            " AND (%s::text IS NULL OR user_id = %s) ORDER BY embedding <=> %s LIMIT 10",
            (tenant_id, user_id, user_id, Vector(vector)),
        ).fetchall()
    return [row[0] for row in rows]


async def test_a_small_tenant_beside_a_big_one_gets_its_exact_top_10(
    own_urls: DatabaseUrls, own_database: Database
) -> None:
    plain = own_urls.admin.replace("postgresql+psycopg://", "postgresql://")
    tenants = load(plain)
    rng = random.Random(11)
    cases: list[tuple[str, str | None]] = [("small", None), ("big", "small-user")]
    for tenant, user_id in cases:
        principal = Principal(tenants[tenant], uuid.uuid4(), Role.READER, None)
        for _ in range(5):
            vector = random_vector(rng)
            async with own_database.tenant(principal.tenant_id) as db:
                hits = await MemoryService(db, principal).search(
                    MemoryQuery("nothing matches this", vector, MODEL),
                    user_id=user_id,
                    limit=10,
                    min_score=-1.0,
                )
            found: list[Any] = [hit.memory.memory_id for hit in hits]
            assert found == exact_top(plain, tenants[tenant], user_id, vector)
