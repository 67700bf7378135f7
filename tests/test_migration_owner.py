"""Migrations run by a schema owner that is not a superuser, as on managed Postgres, from base
to head with only what an administrator must do beforehand (``docs/operations.md``,
"Migrations"): the claim queues are filled with every tenant's unfinished work that exists when
the upgrade runs, a memory redacted before vectors went with redactions loses its vector, and an
empty database goes down to base and up again as the same owner.

The owner has ``CREATEROLE`` and ``CREATEDB``, neither ``SUPERUSER`` nor ``BYPASSRLS``, and owns
the database; an administrator created the ``vector`` extension in it. The three workmem roles
are cluster-wide, so the test server already has them; the owner holds them either as granted
by an administrator with the admin option (it then inherits ``workmem_auditor`` too, and the
restrictive auditor policies on ``archives`` apply to its own reads), or as PostgreSQL 16+
leaves the creator of a role: the admin option alone, without ``INHERIT`` or ``SET``.
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
    plain_url: str  # the server's own superuser, for seeding and reading

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.plain_url, autocommit=True) as connection:
            cursor = connection.execute(statement.encode(), params)
            return cursor.fetchall() if cursor.description else []


def login_url(url: str, user: str, password: str) -> str:
    return make_url(url).set(username=user, password=password).render_as_string(hide_password=False)


MEMBERSHIPS = {
    # The roles existed before the owner (another database of the cluster, or an administrator
    # created them): the administrator grants them with the admin option; the owner's default
    # INHERIT and SET come with it.
    "granted": "WITH ADMIN OPTION",
    # The owner created them itself: PostgreSQL 16+ gives a role's creator the admin option
    # alone, neither INHERIT nor SET.
    "created": "WITH ADMIN TRUE, INHERIT FALSE, SET FALSE",
}


@pytest.fixture(params=sorted(MEMBERSHIPS))
def owned(request: pytest.FixtureRequest, postgres: PostgresForTests) -> Iterator[OwnedDatabase]:
    name = f"wmown_{uuid.uuid4().hex[:10]}"
    owner = f"{name}_owner"
    password = secrets.token_hex(16)
    server = psycopg.connect(libpq_url(postgres.url("postgres")), autocommit=True)
    try:
        row = server.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if row.fetchone() != (True,):
            pytest.skip("the test server's login is not a superuser: it cannot create roles")
        version = server.execute("SELECT current_setting('server_version_num')").fetchone()
        assert version is not None
        if request.param == "created" and int(version[0]) < 160_000:
            pytest.skip("before PostgreSQL 16, a role's creator is a full member of it")
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
        server.execute(f"GRANT {', '.join(ROLES)} TO {owner} {MEMBERSHIPS[request.param]}")
        server.execute(f'CREATE DATABASE "{name}" OWNER {owner}')
        url = postgres.url(name)
        with psycopg.connect(libpq_url(url), autocommit=True) as database:
            # The one step the owner cannot take: pgvector is not a trusted extension.
            database.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield OwnedDatabase(
            owner=owner, owner_url=login_url(url, owner, password), plain_url=libpq_url(url)
        )
    finally:
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        server.execute(f"DROP ROLE IF EXISTS {owner}")
        server.close()


def test_the_claim_queues_hold_the_unfinished_work_of_an_owner_migrated_database(
    owned: OwnedDatabase,
) -> None:
    rights = owned.sql(
        "SELECT rolsuper, rolbypassrls, rolcreaterole FROM pg_roles WHERE rolname = %s",
        (owned.owner,),
    )
    assert rights == [(False, False, True)]
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
    # The owner may hand functions to the definer and replace them, whichever way it held it.
    usable = owned.sql(
        "SELECT pg_has_role(%s, 'workmem_definer', 'USAGE'),"
        " has_schema_privilege('workmem_definer', 'public', 'CREATE')",
        (owned.owner,),
    )
    assert usable == [(True, True)]


def test_an_owner_takes_an_empty_database_down_to_base_and_up_again(
    owned: OwnedDatabase,
) -> None:
    migrations.upgrade(owned.owner_url)
    migrations.downgrade(owned.owner_url, "base")
    assert owned.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'") == [
        ("alembic_version",)
    ]
    # The definer's right to create in the schema was given by the chain and goes with it.
    assert owned.sql("SELECT has_schema_privilege('workmem_definer', 'public', 'CREATE')") == [
        (False,)
    ]
    migrations.upgrade(owned.owner_url)
    assert migrations.current_revision(owned.owner_url) == migrations.head_revision()
