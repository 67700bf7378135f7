"""Filtered vector search: recall@10 and p50 of memory search for every filter selectivity, against
the raw unfiltered HNSW query in the same run.

Prints JSON. One table holds a big tenant (100 000 memories, users from 0.5 % to 5 % of it, five
categories from 5 % to 35 %) beside a small one (3 000). Vectors are random unit vectors, so every
query's exact neighbours are unambiguous (no ties, unlike templated text). For each filter case —
a whole tenant, a user, a category, a user's category — the service's search runs as the app's
own login under row-level security, in its tenant transaction, choosing exact or index search per
query (``app/memories/vector_plan.py``); beside it, in alternation query by query, the raw
``ORDER BY embedding <=> q LIMIT 10`` over the whole table as the owner (the baseline), and, for
reference, the same search forced onto the index (what it did before plans were chosen) and
forced exact (in a second pass, so that their reads do not evict what the chosen plans read).
Recall@10 is against exact search over the filtered rows, as the owner with index scans off,
computed before any timing. The query embedding is given, not computed, on every path.
``--without-covering-index`` drops the index exact search reads (``ix_memories_vector_scope``),
to measure the same code reading the table instead. On the same rows, phase 2's duplicate lookup
(``bench/duplicate_lookup.py``): a filtered nearest-neighbour query of its own.

    python -m bench.filtered_search [--big 100000] [--small 3000] [--queries 200]
                                    [--without-covering-index]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import time
import uuid
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector

from app.db import Database
from app.memories.repository import MemoryRepository
from app.memories.service import CANDIDATES_PER_RETRIEVER, MemoryQuery, MemoryService
from app.memories.vector_plan import (
    EXACT,
    ITERATIVE_SCAN_SINCE,
    SIZES,
    VectorPlan,
    parse_version,
)
from app.tenancy.principal import Principal, Role
from bench.duplicate_lookup import lookup_cases, lookup_vectors
from tests.support.memory_rows import memory_source
from tests.support.postgres import PostgresForTests

DIM = 384
K = 10
MODEL = f"bench-random:v1:{DIM}"
CATEGORIES = ("preference", "profile", "entity", "event", "lesson")
WEIGHTS = (35, 20, 15, 25, 5)
QUERY_TEXT = "zzqxv"
"""A word no memory holds: the full-text retriever finds nothing, so the hybrid order is the
vector order and recall is the vector retriever's."""
INDEX_ONLY = VectorPlan(exact=False)
ITERATIVE = VectorPlan(exact=False, iterative=True)
"""pgvector 0.8's iterative scan (strict order) at the default ef_search: measured for reference
where the server has it."""
COLUMNS = (
    "tenant_id, memory_id, user_id, category, content, confidence, agent_session_id,"
    " archive_seq, embedding, embedding_model, created_at, updated_at"
)
TYPES = [
    "uuid", "uuid", "text", "varchar", "text", "float8", "uuid", "int4", "vector", "text",
    "timestamptz", "timestamptz",
]  # fmt: skip


LATENT = 16
"""Vectors are random points of a 16-dimensional subspace of the 384 dimensions, as a model's
embeddings occupy few of their dimensions; uniformly random 384-dimensional vectors have no
structure an approximate index can use (raw HNSW recall@10 about 0.3 on them)."""


def _axis(seed: int) -> list[float]:
    rng = random.Random(f"basis-{seed}")
    return [rng.gauss(0.0, 1.0) for _ in range(DIM)]


BASIS = [_axis(j) for j in range(LATENT)]


def unit_vector(rng: random.Random) -> list[float]:
    """A random unit vector of the subspace: continuous, so no two are equally near a query."""
    values = [0.0] * DIM
    for axis in BASIS:
        weight = rng.gauss(0.0, 1.0)
        values = [v + weight * a for v, a in zip(values, axis, strict=True)]
    norm = math.sqrt(sum(v * v for v in values))
    # Rounded to float32 as pgvector stores them, so Python and Postgres see the same vector.
    return array("f", (v / norm for v in values)).tolist()


def big_user(rng: random.Random) -> str:
    """5 % of the big tenant is one user, 0.5 % another, the rest spread over 190 users."""
    draw = rng.random()
    if draw < 0.05:
        return "user-5pct"
    if draw < 0.055:
        return "user-0.5pct"
    return f"user-{rng.randrange(190)}"


def memory_rows(
    count: int, rng: random.Random, tenant_id: uuid.UUID, source: uuid.UUID, users: Any
) -> Iterator[tuple[Any, ...]]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for n in range(count):
        moment = start + timedelta(seconds=n)
        yield (
            tenant_id, uuid.UUID(int=rng.getrandbits(128)), users(rng),
            rng.choices(CATEGORIES, weights=WEIGHTS)[0], f"memory number {n}", 0.8, source, 1,
            Vector(unit_vector(rng)), MODEL, moment, moment,
        )  # fmt: skip


def load(plain_url: str, big: int, small: int, *, covering: bool) -> dict[str, Any]:
    """Both tenants, each with one archive its memories come from; the HNSW and GIN indexes are
    built after the load (and without ``covering``, the covering index of exact search is
    dropped, to measure exact search reading the table as it did before), then the table is
    vacuumed and analysed."""
    rng = random.Random(20261202)
    tenants: dict[str, uuid.UUID] = {}
    with psycopg.connect(plain_url) as connection:
        register_vector(connection)
        connection.execute("DROP INDEX ix_memories_embedding")
        connection.execute("DROP INDEX ix_memories_content_tsv")
        started = time.perf_counter()
        for name, count, users in (
            ("big", big, big_user),
            ("small", small, lambda r: f"user-{r.randrange(10)}"),
        ):
            tenant_id, source = memory_source(connection, name)
            with connection.cursor().copy(
                f"COPY memories ({COLUMNS}) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(TYPES)
                for row in memory_rows(count, rng, tenant_id, source, users):
                    copy.write_row(row)
            tenants[name] = tenant_id
        loaded = time.perf_counter() - started
        connection.execute("SET maintenance_work_mem = '1GB'")
        started = time.perf_counter()
        connection.execute(
            "CREATE INDEX ix_memories_embedding ON memories"
            " USING hnsw (embedding vector_cosine_ops)"
        )
        hnsw = time.perf_counter() - started
        connection.execute(
            "CREATE INDEX ix_memories_content_tsv ON memories USING gin (content_tsv)"
        )
        if not covering:
            connection.execute("DROP INDEX ix_memories_vector_scope")
        connection.commit()
        connection.autocommit = True
        connection.execute("VACUUM ANALYZE memories")
        version = connection.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()[0]  # type: ignore[index]
        server = connection.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    sizes = connection_sizes(plain_url)
    return {
        "tenants": tenants,
        "covering_index": covering,
        **sizes,
        "load_s": round(loaded, 1),
        "hnsw_build_s": round(hnsw, 1),
        "pgvector": version,
        "postgres": server,
    }


def connection_sizes(plain_url: str) -> dict[str, Any]:
    """The megabytes of the table and of the indexes the searches read."""
    with psycopg.connect(plain_url) as connection:
        row = connection.execute(
            "SELECT pg_relation_size('memories'), pg_relation_size('ix_memories_embedding'),"
            " coalesce(pg_relation_size(to_regclass('ix_memories_vector_scope')), 0)"
        ).fetchone()
    assert row is not None
    table, hnsw, covering = (round(size / 2**20, 1) for size in row)
    return {"table_mb": table, "hnsw_index_mb": hnsw, "covering_index_mb": covering}


@dataclass(frozen=True)
class Case:
    name: str
    tenant: str
    user_id: str | None = None
    category: str | None = None


CASES = (
    Case("big tenant, no filter", "big"),
    Case("small tenant, no filter", "small"),
    Case("small tenant, category 5 %", "small", category="lesson"),
    Case("big tenant, user 5 %", "big", user_id="user-5pct"),
    Case("big tenant, user 0.5 %", "big", user_id="user-0.5pct"),
    Case("big tenant, category 5 %", "big", category="lesson"),
    Case("big tenant, category 35 %", "big", category="preference"),
    Case("big tenant, user 5 % and category 35 %", "big", "user-5pct", "preference"),
)

RAW = "SELECT memory_id FROM memories ORDER BY embedding <=> %s LIMIT 10"


def raw_search(connection: psycopg.Connection[Any], vector: Vector) -> float:
    started = time.perf_counter()
    connection.execute(RAW, (vector,), prepare=True).fetchall()
    return time.perf_counter() - started


def exact_ids(
    connection: psycopg.Connection[Any], tenant_id: uuid.UUID, case: Case, vector: Vector
) -> list[Any]:
    """The true top K of the filtered rows (no index scan: the HNSW index cannot serve it)."""
    with connection.transaction():
        connection.execute("SET LOCAL enable_indexscan = off")
        connection.execute("SET LOCAL enable_indexonlyscan = off")
        rows = connection.execute(
            "SELECT memory_id FROM memories WHERE tenant_id = %s"
            " AND (%s::text IS NULL OR user_id = %s) AND (%s::text IS NULL OR category = %s)"
            " ORDER BY embedding <=> %s LIMIT %s",
            (tenant_id, case.user_id, case.user_id, case.category, case.category, vector, K),
        ).fetchall()
    return [row[0] for row in rows]


@dataclass
class Series:
    seconds: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)

    def p50_ms(self) -> float:
        return round(statistics.median(self.seconds) * 1000, 3)

    def mean_recall(self) -> float:
        return round(statistics.mean(self.recall), 4)


async def timed_search(
    database: Database,
    principal: Principal,
    case: Case,
    query: MemoryQuery,
    plan: VectorPlan | None,
) -> tuple[float, list[Any]]:
    """Seconds for one search in its own tenant transaction, and the ids it found (best first).
    ``plan`` None: the service chooses, as it does for a request."""
    started = time.perf_counter()
    async with database.tenant(principal.tenant_id) as db:
        if plan is None:
            hits = await MemoryService(db, principal).search(
                query, user_id=case.user_id, category=case.category, limit=K, min_score=-1.0
            )
        else:
            hits = await MemoryRepository(db, principal.scope).search(
                query=query.text,
                vector=query.vector,
                model=query.embedding_model,
                per_retriever=CANDIDATES_PER_RETRIEVER,
                user_id=case.user_id,
                category=case.category,
                include_superseded=False,
                min_score=-1.0,
                limit=K,
                plan=plan,
            )
    return time.perf_counter() - started, [hit.memory.memory_id for hit in hits]


async def measure(big: int, small: int, queries: int, *, covering: bool) -> dict[str, Any]:
    postgres = PostgresForTests.start()
    try:
        urls = postgres.create_app_database("wmbenchfilter")
        plain = urls.admin.replace("postgresql+psycopg://", "postgresql://")
        loaded = load(plain, big, small, covering=covering)
        tenants: dict[str, uuid.UUID] = loaded.pop("tenants")
        connection = psycopg.connect(plain, autocommit=True)
        register_vector(connection)
        # The service logs in as its own role: row-level security applies to every statement.
        database = Database.from_url(urls.app, pool_size=2)
        try:
            return {
                **loaded,
                "big_tenant_memories": big,
                "small_tenant_memories": small,
                "queries": queries,
                "k": K,
                "target": "recall@10 >= 0.95 and service p50 <= 2 x raw unfiltered HNSW p50",
                **await run_cases(
                    connection,
                    database,
                    tenants,
                    queries,
                    iterative=parse_version(loaded["pgvector"]) >= ITERATIVE_SCAN_SINCE,
                ),
                "duplicate_lookup": await lookup_cases(
                    connection,
                    database,
                    tenants,
                    lookup_vectors(min(queries, 50) + 5, unit_vector),
                    MODEL,
                ),
            }
        finally:
            connection.close()
            await database.dispose()
    finally:
        postgres.stop()


async def run_cases(
    connection: psycopg.Connection[Any],
    database: Database,
    tenants: dict[str, uuid.UUID],
    queries: int,
    *,
    iterative: bool,
) -> dict[str, Any]:
    principals = {
        name: Principal(tenant_id, uuid.UUID(int=0), Role.READER, None)
        for name, tenant_id in tenants.items()
    }
    rng = random.Random(7)
    vectors = [unit_vector(rng) for _ in range(queries)]
    # The true neighbours first, outside every timing: exact search as the owner reads the
    # filtered rows from the table, and would evict from the cache what the searches use.
    truths = {
        (case.name, n): set(exact_ids(connection, tenants[case.tenant], case, Vector(vector)))
        for n, vector in enumerate(vectors)
        for case in CASES
    }
    SIZES.forget()
    raw = Series()
    raw_beside_references = Series()
    chosen = {case.name: Series() for case in CASES}
    index_only = {case.name: Series() for case in CASES}
    exact = {case.name: Series() for case in CASES}
    scanned = {case.name: Series() for case in CASES}
    references: list[tuple[dict[str, Series], VectorPlan]] = [
        (index_only, INDEX_ONLY),
        (exact, EXACT),
    ]
    if iterative:
        references.append((scanned, ITERATIVE))
    # Two passes, each query by query in alternation with the raw query, so drift in the disk
    # or the CPU affects them alike: the service as it chooses, then the forced plans for
    # reference. Apart, because a forced exact search over a big share reads the whole share
    # (up to the whole tenant) and would evict from the cache what the chosen plans read,
    # which no workload of real searches does.
    for passes, baseline in (([(chosen, None)], raw), (references, raw_beside_references)):
        warm_ups = vectors[:20]
        for warm, vector in enumerate(warm_ups + vectors):
            measured = warm >= len(warm_ups)
            query = MemoryQuery(QUERY_TEXT, vector, MODEL)
            raw_s = raw_search(connection, Vector(vector))
            if measured:
                baseline.seconds.append(raw_s)
            for case in CASES:
                principal = principals[case.tenant]
                truth = truths[(case.name, warm - len(warm_ups))] if measured else set()
                for series, plan in passes:
                    seconds, found = await timed_search(database, principal, case, query, plan)
                    if measured:
                        series[case.name].seconds.append(seconds)
                        series[case.name].recall.append(len(truth & set(found[:K])) / K)
    raw50 = raw.p50_ms()
    reference50 = raw_beside_references.p50_ms()
    report: dict[str, Any] = {}
    for case in CASES:
        async with database.tenant(tenants[case.tenant]) as db:
            service = MemoryService(db, principals[case.tenant])
            plan = await service.vector_plan(
                MemoryQuery(QUERY_TEXT, vectors[0], MODEL),
                limit=K,
                per_retriever=CANDIDATES_PER_RETRIEVER,
                user_id=case.user_id,
                category=case.category,
                include_superseded=False,
            )
            sizes = await MemoryRepository(db, principals[case.tenant].scope).sizes(
                model=MODEL,
                user_id=case.user_id,
                category=case.category,
                include_superseded=False,
            )
        mine = chosen[case.name]
        report[case.name] = {
            "filtered_rows": sizes.filtered_rows,
            "share_of_table": round(sizes.filtered_rows / max(sizes.table_rows, 1), 4),
            "plan": "exact"
            if plan.exact
            else f"index, ef_search {plan.ef_search}" + (", iterative" if plan.iterative else ""),
            "recall_at_10": mine.mean_recall(),
            "p50_ms": mine.p50_ms(),
            "ratio_p50_to_raw": round(mine.p50_ms() / raw50, 3),
            "index_only_recall_at_10": index_only[case.name].mean_recall(),
            "index_only_p50_ms": index_only[case.name].p50_ms(),
            "iterative_scan_recall_at_10": scanned[case.name].mean_recall() if iterative else None,
            "iterative_scan_p50_ms": scanned[case.name].p50_ms() if iterative else None,
            "exact_p50_ms": exact[case.name].p50_ms(),
            "exact_ratio_p50_to_raw": round(exact[case.name].p50_ms() / reference50, 3),
        }
    return {
        "raw_unfiltered_hnsw_p50_ms": raw50,
        "raw_unfiltered_hnsw_p50_ms_beside_references": reference50,
        "cases": report,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=3_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--without-covering-index",
        action="store_true",
        help="drop ix_memories_vector_scope: exact search reads the table, as before it existed",
    )
    arguments = parser.parse_args()
    report = asyncio.run(
        measure(
            arguments.big,
            arguments.small,
            arguments.queries,
            covering=not arguments.without_covering_index,
        )
    )
    print(json.dumps(report, indent=2, ensure_ascii=False, default=str))


if __name__ == "__main__":
    main()
