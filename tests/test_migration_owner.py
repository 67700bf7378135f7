"""Migrations run by a schema owner that is not a superuser, as on managed Postgres: the claim
queues are filled with every tenant's unfinished work that exists when the upgrade runs, and a
memory redacted before vectors went with redactions loses its vector.

The owner has ``CREATEROLE`` and ``CREATEDB``, neither ``SUPERUSER`` nor ``BYPASSRLS``, and the
three workmem roles granted beforehand with the admin option (``docs/operations.md``, "Your own
Postgres"), so it inherits ``workmem_auditor`` too: the restrictive auditor policies on
``archives`` apply to its own reads. One revision of the chain (``0003``: ``ALTER ROLE
workmem_app … NOSUPERUSER NOBYPASSRLS``) takes a superuser whatever the owner's rights; a
superuser runs that one step and hands what it created to the owner.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from app import migrations
from app.db import libpq_url
from tests.support.postgres import MIGRATION_LOCK, PostgresForTests

ROLES = ("workmem_app", "workmem_definer", "workmem_auditor")
REDACTED_VECTORS = "20261202_0104_redacted_vectors"
WEBHOOK_QUEUE = "20261202_0535_webhook_queue"
QUEUES = ("claimable_archives", "claimable_webhook_deliveries")


def before(revision: str) -> str:
    """The revision the chain runs just before ``revision``."""
    script = ScriptDirectory.from_config(migrations.alembic_config())
    down = script.get_revision(revision).down_revision
    assert isinstance(down, str)
    return down


@dataclass(frozen=True)
class OwnedDatabase:
    owner: str
    owner_url: str
    superuser_url: str  # a superuser of the test's own, for the one step that needs one
    superuser: str
    plain_url: str  # the server's own superuser, for seeding and reading

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.plain_url, autocommit=True) as connection:
            cursor = connection.execute(statement.encode(), params)
            return cursor.fetchall() if cursor.description else []


def login_url(url: str, user: str, password: str) -> str:
    return make_url(url).set(username=user, password=password).render_as_string(hide_password=False)


@pytest.fixture
def owned(postgres: PostgresForTests) -> Iterator[OwnedDatabase]:
    name = f"wmown_{uuid.uuid4().hex[:10]}"
    owner, superuser = f"{name}_owner", f"{name}_super"
    password = secrets.token_hex(16)
    server = psycopg.connect(libpq_url(postgres.url("postgres")), autocommit=True)
    try:
        row = server.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if row.fetchone() != (True,):
            pytest.skip("the test server's login is not a superuser: it cannot create roles")
        # Roles are cluster-wide: no other migration of this server runs meanwhile.
        server.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        for role in ROLES:
            if server.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                continue
            server.execute(f"CREATE ROLE {role} NOLOGIN")
        server.execute(
            f"CREATE ROLE {owner} LOGIN PASSWORD '{password}' "
            "CREATEROLE CREATEDB NOSUPERUSER NOBYPASSRLS"
        )
        server.execute(f"GRANT {', '.join(ROLES)} TO {owner} WITH ADMIN OPTION")
        server.execute(f"CREATE ROLE {superuser} LOGIN SUPERUSER PASSWORD '{password}'")
        server.execute(f'CREATE DATABASE "{name}" OWNER {owner}')
        url = postgres.url(name)
        with psycopg.connect(libpq_url(url), autocommit=True) as database:
            # What the owner cannot do itself: pgvector is not a trusted extension, and a
            # non-superuser may hand a function to workmem_definer only where that role may
            # create one.
            database.execute("CREATE EXTENSION IF NOT EXISTS vector")
            database.execute("GRANT CREATE ON SCHEMA public TO workmem_definer")
        yield OwnedDatabase(
            owner=owner,
            owner_url=login_url(url, owner, password),
            superuser_url=login_url(url, superuser, password),
            superuser=superuser,
            plain_url=libpq_url(url),
        )
    finally:
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        for role in (owner, superuser):
            server.execute(f"DROP ROLE IF EXISTS {role}")
        server.close()


def test_the_claim_queues_hold_the_unfinished_work_of_an_owner_migrated_database(
    owned: OwnedDatabase,
) -> None:
    rights = owned.sql(
        "SELECT rolsuper, rolbypassrls, rolcreaterole FROM pg_roles WHERE rolname = %s",
        (owned.owner,),
    )
    assert rights == [(False, False, True)]
    migrations.upgrade(owned.owner_url, "0002")
    migrations.upgrade(owned.superuser_url, "0003")
    owned.sql(f"REASSIGN OWNED BY {owned.superuser} TO {owned.owner}")
    migrations.upgrade(owned.owner_url, before(REDACTED_VECTORS))

    tenant = owned.sql("INSERT INTO tenants (name) VALUES ('owned') RETURNING tenant_id")[0][0]
    session = owned.sql(
        "INSERT INTO agent_sessions (tenant_id, last_seq) VALUES (%s, 10)"
        " RETURNING agent_session_id",
        (tenant,),
    )[0][0]
    owned.sql(
        "INSERT INTO archives (tenant_id, agent_session_id, archive_seq, start_seq, end_seq)"
        " VALUES (%s, %s, 1, 1, 10)",
        (tenant, session),
    )
    # A memory redacted before its vector was cleared with it.
    owned.sql(
        "INSERT INTO memories (tenant_id, category, content, confidence, agent_session_id,"
        " archive_seq, embedding, embedding_model)"
        " SELECT %s, 'lesson', '[redacted]', 1, %s, 1,"
        "        array_fill(0.5::real, ARRAY[a.atttypmod])::vector, 'offline'"
        "   FROM pg_attribute a"
        "  WHERE a.attrelid = 'memories'::regclass AND a.attname = 'embedding'",
        (tenant, session),
    )
    migrations.upgrade(owned.owner_url, before(WEBHOOK_QUEUE))
    webhook = owned.sql(
        "INSERT INTO webhook_subscriptions (tenant_id, url, events, secret)"
        " VALUES (%s, 'https://hooks.example/in', ARRAY['archive.done'], 's3cret')"
        " RETURNING webhook_id",
        (tenant,),
    )[0][0]
    delivery = owned.sql(
        "INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_id, event_type, payload)"
        " VALUES (%s, %s, gen_random_uuid(), 'archive.done', '{}') RETURNING delivery_id",
        (tenant, webhook),
    )[0][0]
    migrations.upgrade(owned.owner_url)

    assert owned.sql("SELECT tenant_id, agent_session_id FROM claimable_archives") == [
        (tenant, session)
    ]
    assert owned.sql("SELECT tenant_id, delivery_id FROM claimable_webhook_deliveries") == [
        (tenant, delivery)
    ]
    assert owned.sql("SELECT embedding IS NULL, embedding_model FROM memories") == [
        (True, "[redacted]")
    ]
    # Row-level security is still forced on the tables the backfills read and wrote.
    touched = ["archives", "webhook_deliveries", "memories", *QUEUES]
    forced = owned.sql(
        "SELECT relname, relforcerowsecurity FROM pg_class WHERE relname = ANY(%s)", (touched,)
    )
    assert sorted(forced) == sorted((table, True) for table in touched)
    assert migrations.current_revision(owned.owner_url) == migrations.head_revision()
