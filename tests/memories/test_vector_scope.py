"""Exact vector search reads the covering index ``ix_memories_vector_scope`` and never the table,
under row-level security as the service's own login; rows the index cannot hold (a user id and
embedder name over 320 bytes together, superseded memories) are still found, exactly."""

from __future__ import annotations

import importlib.util
import json
import random
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest
from pgvector import Vector
from pgvector.psycopg import register_vector
from sqlalchemy import Table, text
from sqlalchemy.engine import make_url

from app import migrations
from app.db import Database
from app.memories import search_sql
from app.memories.ranking import RRF_K, SCORE_DIGITS
from app.memories.repository import ALL_CATEGORIES
from app.memories.service import MemoryQuery, MemoryService
from app.models import Memory
from app.tenancy.principal import Principal, Role
from tests.support.memory_rows import memory_source
from tests.support.postgres import DatabaseUrls, PostgresForTests

DIM = 384
MODEL = f"test-random:v1:{DIM}"
ROWS = 6_000
LONG_USER = "long-" + "x" * 320
"""With the embedder's name, over the 320 bytes the covering index holds."""
USERS = ("u-a", "u-b", "u-c")
CATEGORIES = ("profile", "preference", "entity", "event", "lesson")


def revision() -> ModuleType:
    versions = Path(migrations.__file__).resolve().parent.parent / "migrations" / "versions"
    path = versions / "2026-12-02-0310_vector_scope.py"
    spec = importlib.util.spec_from_file_location("vector_scope", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAX_COVERED_DIM = 512
"""The revision's own limit (``revision().MAX_COVERED_DIM``, checked below)."""


def test_the_statement_repeats_the_index_predicates_word_for_word() -> None:
    # The planner uses a partial index only when the query states its predicate.
    created = revision()
    assert created.MAX_COVERED_DIM == MAX_COVERED_DIM
    assert search_sql.COVERED == created.SHORT
    assert search_sql.NOT_COVERED == created.LONG
    assert search_sql.COVERED in search_sql.SEARCH_EXACT.text
    assert search_sql.NOT_COVERED in search_sql.SEARCH_EXACT.text
    table = Memory.__table__
    assert isinstance(table, Table)
    indexes = {str(index.name): index for index in table.indexes}
    for name, predicate in (
        ("ix_memories_vector_scope", created.SHORT),
        ("ix_memories_long_scope", created.LONG),
    ):
        where = indexes[name].dialect_options["postgresql"]["where"]
        assert predicate in str(where)


def random_vector(rng: random.Random) -> list[float]:
    return [rng.gauss(0.0, 1.0) for _ in range(DIM)]


def load(plain_url: str) -> uuid.UUID:
    """One tenant: three users and, for one row in 41, a user with a long id, over five
    categories; a tenth of the rows superseded."""
    rng = random.Random(3)
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    with psycopg.connect(plain_url) as connection:
        register_vector(connection)
        tenant_id, source = memory_source(connection, "scope")
        with connection.cursor().copy(
            "COPY memories (tenant_id, user_id, category, content, confidence, agent_session_id,"
            " archive_seq, embedding, embedding_model, superseded_by, created_at, updated_at)"
            " FROM STDIN"
        ) as copy:
            for n in range(ROWS):
                copy.write_row(
                    (tenant_id, LONG_USER if n % 41 == 0 else USERS[n % 3], CATEGORIES[n % 5], f"memory {n}", 0.8, source, 1,
                     Vector(random_vector(rng)), MODEL,
                     uuid.UUID(int=1) if n % 10 == 9 else None, moment, moment)
                )  # fmt: skip
        connection.commit()
        connection.autocommit = True
        connection.execute("VACUUM ANALYZE memories")
    return tenant_id


def exact_top(
    plain_url: str,
    tenant_id: uuid.UUID,
    vector: list[float],
    *,
    user_id: str | None,
    category: str | None,
    include_superseded: bool,
) -> list[uuid.UUID]:
    with psycopg.connect(plain_url) as connection:
        register_vector(connection)
        connection.execute("SET enable_indexscan = off")
        connection.execute("SET enable_indexonlyscan = off")
        rows = connection.execute(
            "SELECT memory_id FROM memories WHERE tenant_id = %s"
            " AND (%s::text IS NULL OR user_id = %s) AND (%s::text IS NULL OR category = %s)"
            " AND (%s OR superseded_by IS NULL)"
            " ORDER BY embedding <=> %s LIMIT 10",
            (tenant_id, user_id, user_id, category, category, include_superseded,
             Vector(vector)),
        ).fetchall()  # fmt: skip
    return [row[0] for row in rows]


def nodes(plan: Any) -> list[dict[str, Any]]:
    """Every node of a JSON plan."""
    found = [plan]
    for child in plan.get("Plans", []):
        found.extend(nodes(child))
    return found


def subplans(plan: Any, name: str) -> list[dict[str, Any]]:
    found = [plan] if plan.get("Subplan Name") == name else []
    for child in plan.get("Plans", []):
        found.extend(subplans(child, name))
    return found


async def explain_exact(
    database: Database, tenant_id: uuid.UUID, *, user_id: str | None, category: str | None
) -> list[dict[str, Any]]:
    """The scans of ``memories`` that gather the exact retriever's rows, as the service's login."""
    params = {
        "tenant_id": tenant_id,
        "bound_user": None,
        "user_id": user_id,
        "category": category,
        "include_superseded": False,
        "model": MODEL,
        "vector": "[" + ",".join(["0.5"] * DIM) + "]",
        "query": "nothing matches this",
        "per_retriever": 40,
        "rrf_k": RRF_K,
        "digits": SCORE_DIGITS,
        "min_score": -1.0,
        "limit": 10,
        "categories": [category] if category else ALL_CATEGORIES,
    }
    async with database.tenant(tenant_id) as db:
        result = await db.execute(
            text("EXPLAIN (ANALYZE, FORMAT JSON) " + search_sql.SEARCH_EXACT.text), params
        )
        document = result.scalar_one()
    plan = (json.loads(document) if isinstance(document, str) else document)[0]["Plan"]
    gathered = subplans(plan, "CTE filtered")
    assert len(gathered) == 1
    return nodes(gathered[0])


async def test_exact_search_reads_the_covering_index_and_finds_every_row(
    own_urls: DatabaseUrls, own_database: Database
) -> None:
    plain = own_urls.admin.replace("postgresql+psycopg://", "postgresql://")
    tenant_id = load(plain)
    for user_id, category in (("u-a", None), (None, "lesson"), ("u-b", "event"), (None, None)):
        scanned = await explain_exact(own_database, tenant_id, user_id=user_id, category=category)
        by_index = {node["Index Name"]: node for node in scanned if "Index Name" in node}
        covering = by_index["ix_memories_vector_scope"]
        assert covering["Node Type"] == "Index Only Scan"
        assert covering["Heap Fetches"] == 0
        assert covering["Actual Rows"] > 0
        # The rows the covering index cannot hold are read on their own (through their index or
        # the table, as the planner sees fit): never the other rows through the table.
        assert "ix_memories_tenant_id_user_id_category" not in by_index

    principal = Principal(tenant_id, uuid.uuid4(), Role.READER, None)
    rng = random.Random(17)
    cases: list[tuple[str | None, str | None, bool]] = [
        ("u-a", None, False),
        (None, "lesson", False),
        (LONG_USER, None, False),
        (LONG_USER, "entity", False),
        (None, None, False),
        ("u-c", None, True),
        (None, "profile", True),
    ]
    for user_id, category, include_superseded in cases:
        vector = random_vector(rng)
        async with own_database.tenant(tenant_id) as db:
            hits = await MemoryService(db, principal).search(
                MemoryQuery("nothing matches this", vector, MODEL),
                user_id=user_id,
                category=category,
                include_superseded=include_superseded,
                limit=10,
                min_score=-1.0,
            )
        found: list[Any] = [hit.memory.memory_id for hit in hits]
        expected = exact_top(
            plain,
            tenant_id,
            vector,
            user_id=user_id,
            category=category,
            include_superseded=include_superseded,
        )
        assert len(expected) == 10
        assert found == expected, (user_id, category, include_superseded)


def index_names(plain_url: str) -> set[str]:
    with psycopg.connect(plain_url) as connection:
        rows = connection.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memories'"
        ).fetchall()
    return {row[0] for row in rows}


@pytest.mark.parametrize(
    ("dim", "covered"),
    [(384, True), (MAX_COVERED_DIM, True), (MAX_COVERED_DIM + 1, False), (1536, False)],
)
def test_the_covering_index_is_made_only_for_vectors_it_can_hold(
    postgres: PostgresForTests, monkeypatch: pytest.MonkeyPatch, dim: int, covered: bool
) -> None:
    url = postgres.create_database("wmscope")
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    monkeypatch.setenv("WORKMEM_EMBEDDING_DIM", str(dim))
    migrations.upgrade(url)
    names = index_names(plain)
    assert ("ix_memories_vector_scope" in names) is covered
    assert "ix_memories_long_scope" in names
    # The largest entry the index admits: a user id of 4-byte characters filling the 320 bytes
    # with the embedder's name, a full category, every column set. It must be writable.
    model = f"test-random:v1:{dim}"
    user_id = "\U0001f600" * ((320 - len(model)) // 4)
    with psycopg.connect(plain) as connection:
        register_vector(connection)
        tenant_id = connection.execute(
            "INSERT INTO tenants (name) VALUES ('wide') RETURNING tenant_id"
        ).fetchone()[0]  # type: ignore[index]
        source = connection.execute(
            "INSERT INTO agent_sessions (tenant_id, last_seq) VALUES (%s, 1)"
            " RETURNING agent_session_id",
            (tenant_id,),
        ).fetchone()[0]  # type: ignore[index]
        connection.execute(
            "INSERT INTO archives (tenant_id, agent_session_id, archive_seq, start_seq,"
            " end_seq, status) VALUES (%s, %s, 1, 1, 1, 'done')",
            (tenant_id, source),
        )
        rng = random.Random(dim)
        for user in (user_id, user_id + "x" * 300):
            connection.execute(
                "INSERT INTO memories (tenant_id, user_id, category, content, confidence,"
                " agent_session_id, archive_seq, embedding, embedding_model, expires_at)"
                " VALUES (%s, %s, 'preference', 'wide', 0.5, %s, 1, %s, %s, now() + interval '1 day')",
                (tenant_id, user, source,
                 Vector([rng.gauss(0.0, 1.0) for _ in range(dim)]), model),
            )  # fmt: skip
        connection.commit()
        assert len(user_id.encode()) + len(model) > 320 - 4
    # Down to the revision before it, whatever came after it.
    migrations.downgrade(url, revision().down_revision)
    assert not {"ix_memories_vector_scope", "ix_memories_long_scope"} & index_names(plain)
