"""What SQL run as the service's own login (``workmem_app``) can reach outside its tenant.

An attacker holds the app's connection with its own tenant's token (an SQL injection in one of
its requests) and tries every way out: another tenant's id or a made-up token in the settings,
``RESET``, temporary tables shadowing real ones, and every definer function with the victim's
ids. Each case must see and change nothing of the victim's; the victim's rows are counted,
through the service, before and after.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import text

from app.db import Database, libpq_url
from app.tenancy.keys import parse_key
from tests.conftest import TenantKeys

DENIED = (psycopg.errors.InsufficientPrivilege,)
FORGED_MAC = "0" * 64
VICTIM_TABLES = ("agent_sessions", "messages", "api_keys", "idempotency_keys", "tenants")


@dataclass(frozen=True, slots=True)
class Victim:
    tenant_id: uuid.UUID
    agent_session_id: uuid.UUID
    api_key_id: uuid.UUID
    prefix: str


def app_connection(database_url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(libpq_url(database_url), autocommit=True)


def own_token(connection: psycopg.Connection[Any], key: str) -> str:
    parsed = parse_key(key)
    assert parsed is not None
    row = connection.execute(
        "SELECT token FROM workmem_authenticate(%s, %s)", (parsed.prefix, parsed.secret)
    ).fetchone()
    assert row is not None
    return str(row[0])


async def counts(database: Database, victim: Victim) -> dict[str, int]:
    """The victim's rows, read under the victim's own tenant by the service."""
    found = {}
    async with database.tenant(victim.tenant_id) as db:
        for table in VICTIM_TABLES:
            found[table] = int(
                await db.scalar(text(f"SELECT count(*) FROM {table}")) or 0  # noqa: S608 - fixed names
            )
        found["revoked"] = int(
            await db.scalar(text("SELECT count(*) FROM api_keys WHERE revoked_at IS NOT NULL")) or 0
        )
    return found


@pytest.fixture
async def victim(client: httpx.AsyncClient, other_tenant: TenantKeys) -> Victim:
    created = await client.post("/v1/sessions", json={}, headers=other_tenant.write)
    agent_session_id = uuid.UUID(created.json()["id"])
    for word in ("quarterly", "payroll"):
        appended = await client.post(
            f"/v1/sessions/{agent_session_id}/messages",
            json={"role": "user", "content": f"the {word} figures"},
            headers={**other_tenant.write, "Idempotency-Key": f"victim-{word}"},
        )
        assert appended.status_code == 201, appended.text
    parsed = parse_key(other_tenant.writer)
    assert parsed is not None
    keys = await client.get("/v1/keys", headers=other_tenant.headers(other_tenant.admin))
    key_id = next(k["api_key_id"] for k in keys.json()["items"] if k["prefix"] == parsed.prefix)
    return Victim(other_tenant.tenant_id, agent_session_id, uuid.UUID(key_id), parsed.prefix)


@pytest.fixture
def attacker(database_url: str, tenant: TenantKeys) -> Iterator[psycopg.Connection[Any]]:
    """The app's login, with the attacker tenant's own valid token set for the session."""
    with app_connection(database_url) as connection:
        token = own_token(connection, tenant.writer)
        connection.execute("SELECT set_config('app.tenant_token', %s, false)", (token,))
        own = connection.execute("SELECT tenant_id FROM tenants").fetchall()
        assert own == [(tenant.tenant_id,)]
        yield connection


def victim_rows(connection: psycopg.Connection[Any], victim: Victim) -> int:
    """Rows of the victim's that the connection can see, over every table it may read."""
    total = 0
    for table in VICTIM_TABLES:
        row = connection.execute(
            f"SELECT count(*) FROM {table} WHERE tenant_id = %s",  # noqa: S608 - fixed names
            (victim.tenant_id,),
        ).fetchone()
        total += int(row[0]) if row else 0
    return total


def token_of(tenant_id: uuid.UUID | str, expiry: str, mac: str) -> str:
    return f"{tenant_id}.{expiry}.{mac}"


# Each case: (name, statements with "{victim}", "{session}", "{key_id}", "{prefix}", "{own}"
# placeholders; the last statement's rows must be empty, or the case must be denied).
SETTINGS_CASES = [
    ("set_config of the victim's id", ["SELECT set_config('app.tenant_id', '{victim}', false)"]),
    (
        "the victim's id under the attacker's MAC",
        ["SELECT set_config('app.tenant_token', '{victim}.{expiry}.{mac}', false)"],
    ),
    (
        "the victim's id under a made-up MAC",
        [f"SELECT set_config('app.tenant_token', '{{victim}}.{{expiry}}.{FORGED_MAC}', false)"],
    ),
    (
        "the attacker's own token with its expiry moved",
        ["SELECT set_config('app.tenant_token', '{own}.9999999999.{mac}', false)"],
    ),
    ("RESET of the token", ["RESET app.tenant_token"]),
    ("RESET ALL", ["RESET ALL", "SELECT set_config('app.tenant_id', '{victim}', false)"]),
    ("a guessed service key", ["SELECT set_config('app.service_key', 'guess', false)"]),
]


@pytest.mark.parametrize(("name", "statements"), SETTINGS_CASES, ids=[c[0] for c in SETTINGS_CASES])
async def test_no_setting_opens_another_tenant(
    name: str,
    statements: list[str],
    attacker: psycopg.Connection[Any],
    victim: Victim,
    tenant: TenantKeys,
    database: Database,
) -> None:
    before = await counts(database, victim)
    assert victim_rows(attacker, victim) == 0
    token = attacker.execute("SELECT current_setting('app.tenant_token')").fetchone()
    assert token is not None
    _, expiry, mac = str(token[0]).split(".")
    for statement in statements:
        attacker.execute(
            statement.format(victim=victim.tenant_id, own=tenant.tenant_id, expiry=expiry, mac=mac)
        )
    assert victim_rows(attacker, victim) == 0, name
    assert attacker.execute("SELECT workmem_verified_tenant()").fetchone() in (
        (None,),
        (tenant.tenant_id,),
    )
    changed = attacker.execute(
        "UPDATE agent_sessions SET external_id = 'taken' WHERE tenant_id = %s", (victim.tenant_id,)
    )
    assert changed.rowcount == 0
    deleted = attacker.execute("DELETE FROM messages WHERE tenant_id = %s", (victim.tenant_id,))
    assert deleted.rowcount == 0
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        attacker.execute(
            "INSERT INTO api_keys (tenant_id, prefix, secret_sha256, role)"
            " VALUES (%s, 'forgedke', repeat('0', 64), 'admin')",
            (victim.tenant_id,),
        )
    assert await counts(database, victim) == before


# Every definer function the app's login may execute, with the victim's ids: refused
# (insufficient_privilege) or answering nothing.
FUNCTION_CASES = [
    ("workmem_create_tenant", "SELECT * FROM workmem_create_tenant('forged')", "denied"),
    (
        "workmem_issue_api_key",
        "SELECT * FROM workmem_issue_api_key('{victim}', 'forgedke', repeat('0', 64), 'admin',"
        " NULL, NULL)",
        "denied",
    ),
    ("workmem_revoke_api_key", "SELECT * FROM workmem_revoke_api_key('{key_id}')", "denied"),
    (
        "workmem_claim_archive",
        "SELECT * FROM workmem_claim_archive(30, '{victim}', '{session}')",
        "denied",
    ),
    (
        "workmem_requeue_failed",
        "SELECT * FROM workmem_requeue_failed('{victim}', NULL, NULL)",
        "denied",
    ),
    ("workmem_tenant_ids", "SELECT * FROM workmem_tenant_ids()", "denied"),
    ("workmem_archive_queue", "SELECT * FROM workmem_archive_queue()", "denied"),
    (
        "workmem_purge_idempotency_keys",
        "SELECT workmem_purge_idempotency_keys(now() + interval '1 day')",
        "denied",
    ),
    (
        "workmem_claim_webhook_deliveries",
        "SELECT * FROM workmem_claim_webhook_deliveries(30, 100)",
        "denied",
    ),
    ("workmem_mac", "SELECT workmem_mac('{victim}.9999999999')", "denied"),
    ("workmem_sign", "SELECT workmem_sign('{victim}')", "denied"),
    (
        "workmem_tenant_token",
        "SELECT t FROM workmem_tenant_token('{victim}', 'guess') t WHERE t IS NOT NULL",
        "empty",
    ),
    (
        "workmem_tenant_token with a guessed service key set",
        "SELECT set_config('app.service_key', 'guess', true), t"
        " FROM workmem_tenant_token('{victim}') t WHERE t IS NOT NULL",
        "empty",
    ),
    ("workmem_is_service", "SELECT 1 WHERE workmem_is_service('guess')", "empty"),
    (
        "workmem_authenticate",
        "SELECT * FROM workmem_authenticate('{prefix}', 'a-guessed-secret')",
        "empty",
    ),
    (
        "workmem_history_search",
        "SELECT * FROM workmem_history_search('{session}', 'payroll', 0, 1000000, 10)",
        "empty",
    ),
    (
        "workmem_memory_text_candidates",
        "SELECT c.* FROM (VALUES ('hashing'), ('offline')) m(model) CROSS JOIN LATERAL"
        " workmem_memory_text_candidates('payroll', NULL, 10, m.model, NULL, NULL, NULL, true) c",
        "empty",
    ),
    (
        "workmem_append with the victim's id and no token",
        "SELECT * FROM workmem_append('{victim}', NULL, '{session}', NULL, ARRAY['user'],"
        ' ARRAY[\'{{"role": "user", "content": "x"}}\'::jsonb], ARRAY[1], ARRAY[\'x\'],'
        " ARRAY[NULL::jsonb], ARRAY[NULL::timestamptz], NULL::bigint)",
        "empty",
    ),
    (
        "workmem_append with a forged token",
        "SELECT * FROM workmem_append('{victim}', '{victim}.9999999999.{forged}',"
        " '{session}', NULL, ARRAY['user'], ARRAY['{{\"role\": \"user\"}}'::jsonb], ARRAY[1],"
        " ARRAY['x'], ARRAY[NULL::jsonb], ARRAY[NULL::timestamptz], NULL::bigint)",
        "empty",
    ),
    (
        "workmem_append with the attacker's own token",
        "SELECT * FROM workmem_append('{victim}', current_setting('app.tenant_token', true),"
        " '{session}', NULL, ARRAY['user'], ARRAY['{{\"role\": \"user\"}}'::jsonb], ARRAY[1],"
        " ARRAY['x'], ARRAY[NULL::jsonb], ARRAY[NULL::timestamptz], NULL::bigint)",
        "empty",
    ),
]


@pytest.mark.parametrize(
    ("name", "statement", "expected"), FUNCTION_CASES, ids=[c[0] for c in FUNCTION_CASES]
)
async def test_no_definer_function_acts_for_another_tenant(
    name: str,
    statement: str,
    expected: str,
    attacker: psycopg.Connection[Any],
    victim: Victim,
    database: Database,
) -> None:
    before = await counts(database, victim)
    sql = statement.format(
        victim=victim.tenant_id,
        session=victim.agent_session_id,
        key_id=victim.api_key_id,
        prefix=victim.prefix,
        forged=FORGED_MAC,
    )
    if expected == "denied":
        with pytest.raises(DENIED):
            attacker.execute(sql.encode())
    else:
        assert attacker.execute(sql.encode()).fetchall() == [], name
    assert victim_rows(attacker, victim) == 0
    assert await counts(database, victim) == before


def test_the_keyring_and_the_definer_role_are_out_of_reach(
    attacker: psycopg.Connection[Any],
) -> None:
    for statement in (
        "SELECT * FROM workmem_keyring",
        "UPDATE workmem_keyring SET service_key_sha256 = NULL",
        "SET ROLE workmem_definer",
    ):
        with pytest.raises(DENIED):
            attacker.execute(statement.encode())


def test_a_temporary_table_does_not_shadow_a_table_inside_a_definer_function(
    database_url: str,
) -> None:
    with app_connection(database_url) as connection:
        real = connection.execute("SELECT workmem_schema_revision()").fetchone()
        connection.execute("CREATE TEMP TABLE alembic_version (version_num text)")
        connection.execute("INSERT INTO alembic_version VALUES ('forged')")
        connection.execute("GRANT SELECT ON alembic_version TO PUBLIC")
        shadowed = connection.execute("SELECT workmem_schema_revision()").fetchone()
    assert real is not None
    assert shadowed == real


async def test_a_shadowed_keyring_signs_nothing(
    attacker: psycopg.Connection[Any], victim: Victim, database: Database
) -> None:
    """A temporary keyring with keys the attacker knows: a token MACed under them is still
    checked against the real keyring."""
    before = await counts(database, victim)
    attacker.execute(
        "CREATE TEMP TABLE workmem_keyring (singleton boolean, inner_key bytea,"
        " outer_key bytea, service_key_sha256 text)"
    )
    attacker.execute(
        "INSERT INTO workmem_keyring VALUES (true, '\\x00'::bytea, '\\x00'::bytea,"
        " encode(sha256('known'::bytea), 'hex'))"
    )
    attacker.execute("GRANT SELECT ON workmem_keyring TO PUBLIC")
    body = f"{victim.tenant_id}.9999999999"
    mac = attacker.execute(
        "SELECT encode(sha256('\\x00'::bytea || sha256('\\x00'::bytea || convert_to(%s,"
        " 'UTF8'))), 'hex')",
        (body,),
    ).fetchone()
    assert mac is not None
    attacker.execute("SELECT set_config('app.tenant_token', %s, false)", (f"{body}.{mac[0]}",))
    assert victim_rows(attacker, victim) == 0
    assert (
        attacker.execute(
            "SELECT t FROM workmem_tenant_token(%s, 'known') t WHERE t IS NOT NULL",
            (victim.tenant_id,),
        ).fetchall()
        == []
    )
    attacker.execute("SELECT set_config('app.service_key', 'known', false)")
    with pytest.raises(DENIED):
        attacker.execute("SELECT * FROM workmem_tenant_ids()")
    assert await counts(database, victim) == before


async def test_without_a_token_the_login_sees_nothing(
    database_url: str, victim: Victim, tenant: TenantKeys
) -> None:
    with app_connection(database_url) as connection:
        assert victim_rows(connection, victim) == 0
        for table in VICTIM_TABLES:
            row = connection.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608 - fixed names
            assert row == (0,), table
