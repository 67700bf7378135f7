"""Memory search with 10 000 and 100 000 memories, against the raw pgvector HNSW query
(DESIGN 15: p50 ≤ 2 × raw), with recall@10 against exact search; and one LoCoMo conversation's
extracted memories by category.

Prints JSON. For each embedder and size: the p50/p95 latency of the service's search path
(embedding the query, the tenant transaction, the one hybrid statement: HNSW vector top-k and
full-text top-k fused by reciprocal rank) and of the raw ``ORDER BY embedding <=> q LIMIT 10``,
measured query by query in alternation in the same run; the empty tenant transaction alone (the
fixed floor of every request); the HNSW build time; recall@10 and distance ratio of the raw HNSW
query and of the service's vector retriever against exact (sequential) search. Memories are
synthetic but shaped like real ones (``bench/memory_data.py``), embedded by the default
``hashing`` embedder and by a dense stand-in for a model, and loaded with binary COPY. ``--locomo
26`` replays that conversation through the API and lists what was extracted. Starts its own
embedded Postgres; pgvector's default ``hnsw.ef_search`` (40) serves both paths.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector

from app.db import Database
from app.memories.embedding import Embedder
from app.memories.service import CANDIDATES_PER_RETRIEVER, MemoryService, embed_query
from app.tenancy.principal import Principal, Role
from bench.memory_data import EMBEDDERS, query_text, rows, vector_of
from tests.support.postgres import PostgresForTests

SIZES = (10_000, 100_000)
QUERIES = 200
K = 10
WIDE_EF_SEARCH = 200

COLUMNS = (
    "tenant_id, memory_id, user_id, agent_id, category, slot, slot_value, content, confidence,"
    " agent_session_id, archive_seq, source_seqs, embedding, embedding_model, superseded_by,"
    " created_at, updated_at"
)
TYPES = [
    "uuid", "uuid", "text", "text", "varchar", "text", "text", "text", "float8", "uuid", "int4",
    "int8[]", "vector", "text", "uuid", "timestamptz", "timestamptz",
]  # fmt: skip


def load(plain_url: str, count: int, seed: int, embedder: Embedder) -> dict[str, Any]:
    """A tenant, an agent session with one archive, and ``count`` memories; the HNSW and GIN
    indexes are built after the load (as one would for a bulk import), and timed."""
    with psycopg.connect(plain_url) as connection:
        register_vector(connection)
        tenant_id = connection.execute(
            "INSERT INTO tenants (name) VALUES ('bench') RETURNING tenant_id"
        ).fetchone()[0]  # type: ignore[index]
        source = connection.execute(
            "INSERT INTO agent_sessions (tenant_id, last_seq) VALUES (%s, %s)"
            " RETURNING agent_session_id",
            (tenant_id, count),
        ).fetchone()[0]  # type: ignore[index]
        connection.execute(
            "INSERT INTO archives (tenant_id, agent_session_id, archive_seq, start_seq, end_seq,"
            " status) VALUES (%s, %s, 1, 1, %s, 'done')",
            (tenant_id, source, count),
        )
        connection.execute("DROP INDEX ix_memories_embedding")
        connection.execute("DROP INDEX ix_memories_content_tsv")
        started = time.perf_counter()
        with connection.cursor().copy(
            f"COPY memories ({COLUMNS}) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(TYPES)
            for row in rows(count, seed, tenant_id, source, embedder):
                copy.write_row(row)
        loaded = time.perf_counter() - started
        connection.execute("SET maintenance_work_mem = '512MB'")
        started = time.perf_counter()
        connection.execute(
            "CREATE INDEX ix_memories_embedding ON memories"
            " USING hnsw (embedding vector_cosine_ops)"
        )
        hnsw = time.perf_counter() - started
        connection.execute(
            "CREATE INDEX ix_memories_content_tsv ON memories USING gin (content_tsv)"
        )
        connection.execute("ANALYZE memories")
        connection.commit()
    return {"tenant_id": tenant_id, "load_s": round(loaded, 2), "hnsw_build_s": round(hnsw, 2)}


RAW = "SELECT memory_id FROM memories ORDER BY embedding <=> %s LIMIT 10"


def raw_search(connection: psycopg.Connection[Any], vector: Vector) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    found = [row[0] for row in connection.execute(RAW, (vector,), prepare=True).fetchall()]
    return time.perf_counter() - started, found


def raw_ids_at(connection: psycopg.Connection[Any], vector: Vector, ef_search: int) -> list[Any]:
    """The raw HNSW top K with a wider ``hnsw.ef_search`` (untimed: what recall it buys)."""
    with connection.transaction():
        connection.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
        return [row[0] for row in connection.execute(RAW, (vector,)).fetchall()]


def recall_at_k(
    connection: psycopg.Connection[Any], vector: Vector, found: list[Any]
) -> tuple[float, float]:
    """Of ``found[:K]``, the share within the exact top K (a sequential scan), and how much
    farther the found K are than the exact K on average (1.0 = as close). Ties count: a found
    memory is right when its distance is no more than the exact K-th one's."""
    with connection.transaction():
        connection.execute("SET LOCAL enable_indexscan = off")
        exact = [
            float(row[0])
            for row in connection.execute(
                "SELECT embedding <=> %s FROM memories ORDER BY embedding <=> %s LIMIT %s",
                (vector, vector, K),
            ).fetchall()
        ]
    distances = [
        float(row[0])
        for row in connection.execute(
            "SELECT embedding <=> %s FROM memories WHERE memory_id = ANY(%s)",
            (vector, found[:K]),
        ).fetchall()
    ]
    recall = sum(distance <= exact[-1] + 1e-9 for distance in distances) / K
    spread = statistics.mean(distances) / statistics.mean(exact) if any(exact) else 1.0
    return recall, spread


async def service_search(
    database: Database, principal: Principal, embedder: Embedder, query: str
) -> float:
    """Seconds for one search through the service: embed, tenant transaction, search."""
    started = time.perf_counter()
    memory_query = await embed_query(embedder, query)
    async with database.tenant(principal.tenant_id) as db:
        await MemoryService(db, principal).search(memory_query, limit=K, min_score=-1.0)
    return time.perf_counter() - started


async def empty_transaction(database: Database, principal: Principal) -> float:
    """Seconds for the tenant transaction alone (begin, tenant setup, commit): the floor."""
    started = time.perf_counter()
    async with database.tenant(principal.tenant_id):
        pass
    return time.perf_counter() - started


async def service_vector_ids(
    database: Database, principal: Principal, embedder: Embedder, query: str
) -> list[Any]:
    """The service's vector retriever as the timed search uses it (40 candidates, pgvector's
    default ``ef_search``), best first: read back through a search returning every candidate."""
    memory_query = await embed_query(embedder, query)
    async with database.tenant(principal.tenant_id) as db:
        hits = await MemoryService(db, principal).search(
            memory_query,
            limit=2 * CANDIDATES_PER_RETRIEVER,
            min_score=-1.0,
            per_retriever=CANDIDATES_PER_RETRIEVER,
        )
    ranked = sorted(
        (h for h in hits if h.vector_rank is not None), key=lambda h: h.vector_rank or 0
    )
    return [hit.memory.memory_id for hit in ranked]


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass
class Setup:
    name: str
    size: int
    embedder: Embedder
    tenant_id: uuid.UUID
    load_s: float
    hnsw_build_s: float
    connection: psycopg.Connection[Any]
    database: Database
    raw: list[float] = field(default_factory=list)
    service: list[float] = field(default_factory=list)
    transaction: list[float] = field(default_factory=list)
    recall_raw: list[tuple[float, float]] = field(default_factory=list)
    recall_service: list[tuple[float, float]] = field(default_factory=list)
    recall_wide: list[tuple[float, float]] = field(default_factory=list)

    @property
    def principal(self) -> Principal:
        return Principal(self.tenant_id, uuid.UUID(int=0), Role.READER, None)

    def report(self) -> dict[str, Any]:
        def ms(samples: list[float], share: float) -> float:
            return round(percentile(samples, share) * 1000, 3)

        raw50, service50, floor50 = (ms(x, 0.5) for x in (self.raw, self.service, self.transaction))
        return {
            "memories": self.size,
            "embedder": self.embedder.identity,
            "load_s": self.load_s,
            "hnsw_build_s": self.hnsw_build_s,
            "raw_hnsw_p50_ms": raw50,
            "raw_hnsw_p95_ms": ms(self.raw, 0.95),
            "service_p50_ms": service50,
            "service_p95_ms": ms(self.service, 0.95),
            "ratio_p50": round(service50 / raw50, 3),
            "ratio_p95": round(ms(self.service, 0.95) / ms(self.raw, 0.95), 3),
            "tenant_transaction_p50_ms": floor50,
            "ratio_p50_without_the_transaction": round((service50 - floor50) / raw50, 3),
            "recall_at_10_raw_hnsw": round(statistics.mean(r for r, _ in self.recall_raw), 4),
            "recall_at_10_service_vector": round(
                statistics.mean(r for r, _ in self.recall_service), 4
            ),
            "distance_ratio_at_10_raw_hnsw": round(
                statistics.mean(d for _, d in self.recall_raw), 4
            ),
            "distance_ratio_at_10_service_vector": round(
                statistics.mean(d for _, d in self.recall_service), 4
            ),
            f"recall_at_10_raw_hnsw_ef_search_{WIDE_EF_SEARCH}": round(
                statistics.mean(r for r, _ in self.recall_wide), 4
            ),
        }


async def measure(
    sizes: tuple[int, ...], queries: int, embedders: tuple[str, ...]
) -> dict[str, Any]:
    postgres = PostgresForTests.start()
    setups: list[Setup] = []
    try:
        for name in embedders:
            for index, size in enumerate(sizes):
                embedder = EMBEDDERS[name]
                urls = postgres.create_app_database(f"wmbenchmem{name}{size}")
                # Loading and the raw baseline run as the owner; the service as its own login.
                plain = urls.admin.replace("postgresql+psycopg://", "postgresql://")
                loaded = load(plain, size, index, embedder)
                connection = psycopg.connect(plain, autocommit=True)
                register_vector(connection)
                setups.append(
                    Setup(
                        name,
                        size,
                        embedder,
                        loaded["tenant_id"],
                        loaded["load_s"],
                        loaded["hnsw_build_s"],
                        connection,
                        Database.from_url(urls.app, pool_size=2),
                    )
                )
        rng = random.Random(20261201)
        texts = [query_text(rng) for _ in range(queries)]
        for text in texts[:20]:  # warm-up: caches, prepared statements, connections
            for setup in setups:
                raw_search(setup.connection, Vector(vector_of(setup.embedder, text)))
                await service_search(setup.database, setup.principal, setup.embedder, text)
                await empty_transaction(setup.database, setup.principal)
        # Every series is measured query by query in alternation, so drift in the disk or the
        # CPU affects them alike.
        for text in texts:
            for setup in setups:
                vector = Vector(vector_of(setup.embedder, text))
                raw_s, raw_ids = raw_search(setup.connection, vector)
                setup.raw.append(raw_s)
                setup.service.append(
                    await service_search(setup.database, setup.principal, setup.embedder, text)
                )
                setup.transaction.append(await empty_transaction(setup.database, setup.principal))
                setup.recall_raw.append(recall_at_k(setup.connection, vector, raw_ids))
                service_ids = await service_vector_ids(
                    setup.database, setup.principal, setup.embedder, text
                )
                setup.recall_service.append(recall_at_k(setup.connection, vector, service_ids))
                wide = raw_ids_at(setup.connection, vector, WIDE_EF_SEARCH)
                setup.recall_wide.append(recall_at_k(setup.connection, vector, wide))
        return {
            "queries": queries,
            "k": K,
            "target": "service p50 <= 2 x raw p50",
            **{f"{setup.name}_{setup.size}": setup.report() for setup in setups},
        }
    finally:
        for setup in setups:
            setup.connection.close()
            await setup.database.dispose()
        postgres.stop()


async def locomo(name: str) -> dict[str, Any]:
    """Replay one LoCoMo conversation through the API and report what was extracted."""
    from bench.support import bench_app
    from tests.memories.locomo import load as load_conversation

    conversation = load_conversation(name)
    async with bench_app() as bench:
        created = await bench.http.post(
            "/v1/sessions", json={"user_id": conversation.user}, headers=bench.headers
        )
        agent_session_id = created.json()["id"]
        base = f"/v1/sessions/{agent_session_id}"
        for start in range(0, len(conversation.messages), 40):
            batch = conversation.messages[start : start + 40]
            await bench.http.post(
                f"{base}/messages:batch", json={"messages": batch}, headers=bench.headers
            )
            await bench.http.post(
                f"{base}/commit", json={"keep_recent_count": 0, "wait": True}, headers=bench.headers
            )
        listed = await bench.http.get(
            "/v1/memories",
            params={"limit": 200, "include_superseded": "true"},
            headers=bench.headers,
        )
        stored = listed.json()["items"]
        archives = await bench.http.get(
            f"{base}/archives", params={"limit": 200}, headers=bench.headers
        )
        events: Counter[str] = Counter()
        for memory in stored:
            trail = await bench.http.get(
                f"/v1/memories/{memory['id']}/events", headers=bench.headers
            )
            events.update(e["event"] for e in trail.json()["items"])
    skipped: Counter[str] = Counter()
    for archive in archives.json()["items"]:
        skipped.update(archive["memories"]["skipped"])
    by_category: dict[str, list[str]] = {}
    for memory in sorted(stored, key=lambda m: m["source_seqs"]):
        by_category.setdefault(memory["category"], []).append(
            f"#{','.join(map(str, memory['source_seqs']))} {memory['content']}"
        )
    return {
        "conversation": name,
        "user": conversation.user,
        "messages": len(conversation.messages),
        "memories": len(stored),
        "by_category": {category: len(items) for category, items in sorted(by_category.items())},
        "events": dict(sorted(events.items())),
        "skipped": dict(sorted(skipped.items())),
        "memories_by_category": dict(sorted(by_category.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--embedders", default="hashing,dense")
    parser.add_argument("--locomo", default="26", help="conversation to replay ('' for none)")
    parser.add_argument("--skip-search", action="store_true")
    arguments = parser.parse_args()
    report: dict[str, Any] = {}
    if not arguments.skip_search:
        sizes = tuple(int(size) for size in arguments.sizes.split(","))
        embedders = tuple(arguments.embedders.split(","))
        report["search"] = asyncio.run(measure(sizes, arguments.queries, embedders))
    if arguments.locomo:
        report["locomo"] = asyncio.run(locomo(arguments.locomo))
    print(json.dumps(report, indent=2, ensure_ascii=False, default=str))


if __name__ == "__main__":
    main()
