"""The long-term memory revision: the dimension from the environment, forced row-level security,
the indexes, and a working downgrade."""

from __future__ import annotations

import os
import uuid

import psycopg
import pytest
from sqlalchemy.engine import make_url

from app import migrations
from tests.support.postgres import PostgresForTests

TABLES = ("memories", "memory_events")


def query(url: str, sql: str, *params: object) -> list[tuple[object, ...]]:
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        cursor = connection.execute(sql.encode(), params)
        return cursor.fetchall() if cursor.description else []


def test_the_dimension_comes_from_the_environment_and_the_downgrade_undoes_it(
    postgres: PostgresForTests, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres.create_database("wmdim")
    monkeypatch.setenv("WORKMEM_EMBEDDING_DIM", "8")
    migrations.upgrade(url)
    assert query(
        url, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
        " WHERE attrelid = 'memories'::regclass AND attname = 'embedding'",
    ) == [("vector(8)",)]  # fmt: skip
    indexes = {
        str(name): str(definition)
        for name, definition in query(
            url, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories'"
        )
    }
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["ix_memories_embedding"]
    assert "USING gin (content_tsv)" in indexes["ix_memories_content_tsv"]
    assert query(
        url, "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class"
        " WHERE relname IN ('memories', 'memory_events') ORDER BY relname",
    ) == [("memories", True, True), ("memory_events", True, True)]  # fmt: skip
    for table in TABLES:
        [(policy,)] = query(
            url, "SELECT qual FROM pg_policies WHERE tablename = %s AND policyname = 'tenant_isolation'",
            table,
        )  # fmt: skip
        assert "workmem_verified_tenant()" in str(policy)
        grants = {
            row[0]
            for row in query(
                url,
                "SELECT privilege_type FROM information_schema.role_table_grants"
                " WHERE table_name = %s AND grantee = 'workmem_app'",
                table,
            )
        }
        assert grants == {"SELECT", "INSERT", "UPDATE", "DELETE"}

    migrations.downgrade(url, "0002")
    assert query(url, "SELECT to_regclass('memories'), to_regclass('memory_events')") == [
        (None, None)
    ]
    assert query(
        url, "SELECT count(*) FROM information_schema.columns"
        " WHERE table_name = 'archives' AND column_name = 'memories'",
    ) == [(0,)]  # fmt: skip
    monkeypatch.delenv("WORKMEM_EMBEDDING_DIM")
    migrations.upgrade(url)
    assert query(
        url, "SELECT atttypmod FROM pg_attribute"
        " WHERE attrelid = 'memories'::regclass AND attname = 'embedding'",
    ) == [(384,)]  # fmt: skip


@pytest.mark.parametrize("value", ["zero", "0", "2001"])
def test_an_unusable_dimension_is_refused(
    postgres: PostgresForTests, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    url = postgres.create_database("wmbaddim")
    monkeypatch.setenv("WORKMEM_EMBEDDING_DIM", value)
    with pytest.raises(ValueError, match="WORKMEM_EMBEDDING_DIM"):
        migrations.upgrade(url)


def test_the_application_role_sees_only_its_tenant_s_rows(postgres: PostgresForTests) -> None:
    url = postgres.create_database("wmrls")
    migrations.upgrade(url)
    tenant = uuid.uuid4()
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        connection.execute("INSERT INTO tenants (tenant_id, name) VALUES (%s, 't')", (tenant,))
        connection.execute("SELECT set_config('app.tenant_id', %s, true)", (str(tenant),))
        connection.execute(
            "INSERT INTO memory_events (tenant_id, memory_id, event, actor)"
            " VALUES (%s, gen_random_uuid(), 'ADD', 'test')",
            (tenant,),
        )
        connection.commit()
        seen = []
        for other in (tenant, uuid.uuid4(), None):
            token = connection.execute(
                "SELECT coalesce(workmem_tenant_token(%s, %s), '')",
                (other, os.environ["WORKMEM_SERVICE_KEY"]),
            ).fetchone()
            assert token is not None
            with connection.transaction():
                connection.execute("SET LOCAL ROLE workmem_app")
                connection.execute("SELECT set_config('app.tenant_token', %s, true)", token)
                [(count,)] = connection.execute("SELECT count(*) FROM memory_events").fetchall()
                seen.append(count)
        assert seen == [1, 0, 0]
