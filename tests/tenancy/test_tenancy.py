"""Isolation and credentials: 404 across tenants, 401/403 by credential, RLS when code forgets."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import text

from app.db import Database
from app.tenancy.keys import generate_key, hash_secret, parse_key
from tests.conftest import ADMIN_TOKEN, TenantKeys
from tests.support.api import create_session

OPERATOR = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def test_key_format_round_trip() -> None:
    issued = generate_key()
    assert issued.plaintext.startswith("wm_")
    parsed = parse_key(issued.plaintext)
    assert parsed == issued
    assert issued.secret_sha256 == hash_secret(issued.secret)
    assert issued.secret not in issued.secret_sha256
    for bad in ["", "wm_", "wm_short_x", issued.plaintext + "x", "xx_" + issued.plaintext[3:]]:
        assert parse_key(bad) is None


async def test_other_tenants_ids_answer_404(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    probes = [
        ("GET", f"/v1/sessions/{agent_session_id}", None),
        ("DELETE", f"/v1/sessions/{agent_session_id}", None),
        ("GET", f"/v1/sessions/{agent_session_id}/messages", None),
        ("POST", f"/v1/sessions/{agent_session_id}/messages", {"role": "user", "content": "x"}),
        (
            "POST",
            f"/v1/sessions/{agent_session_id}/messages:batch",
            {"messages": [{"role": "user", "content": "x"}]},
        ),
    ]
    for method, path, body in probes:
        response = await client.request(method, path, json=body, headers=other_tenant.write)
        assert response.status_code == 404, (method, path, response.text)
    listed = await client.get("/v1/sessions", headers=other_tenant.read)
    assert agent_session_id not in [item["id"] for item in listed.json()["items"]]
    still = await client.get(f"/v1/sessions/{agent_session_id}", headers=tenant.read)
    assert still.status_code == 200
    assert still.json()["message_count"] == 0


async def test_credentials(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    assert (await client.get("/v1/sessions")).status_code == 401
    bogus = {"Authorization": "Bearer wm_aaaaaaaa_" + "b" * 40}
    assert (await client.get("/v1/sessions", headers=bogus)).status_code == 401
    garbage = {"Authorization": "Bearer not-a-key"}
    assert (await client.get("/v1/sessions", headers=garbage)).status_code == 401
    x_api_key = await client.get("/v1/sessions", headers={"X-API-Key": tenant.reader})
    assert x_api_key.status_code == 200
    # The right prefix with a wrong secret is refused.
    prefix = tenant.writer.split("_")[1]
    wrong_secret = {"Authorization": f"Bearer wm_{prefix}_{'c' * 40}"}
    assert (await client.get("/v1/sessions", headers=wrong_secret)).status_code == 401


async def test_reader_cannot_write(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await create_session(client, tenant)
    append = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "x"},
        headers=tenant.read,
    )
    assert append.status_code == 403
    assert append.headers["content-type"] == "application/problem+json"
    assert (await client.post("/v1/sessions", json={}, headers=tenant.read)).status_code == 403
    delete = await client.delete(f"/v1/sessions/{agent_session_id}", headers=tenant.read)
    assert delete.status_code == 403
    got = await client.get(f"/v1/sessions/{agent_session_id}", headers=tenant.read)
    assert got.json()["message_count"] == 0


async def test_operator_token_cannot_touch_tenant_data(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    assert (await client.get("/v1/sessions", headers=OPERATOR)).status_code == 403
    read = await client.get(f"/v1/sessions/{agent_session_id}", headers=OPERATOR)
    assert read.status_code == 403
    via_header = await client.get("/v1/sessions", headers={"X-API-Key": ADMIN_TOKEN})
    assert via_header.status_code == 403


async def test_operator_issues_and_revokes_keys(client: httpx.AsyncClient) -> None:
    created = await client.post("/v1/admin/tenants", json={"name": "acme"}, headers=OPERATOR)
    assert created.status_code == 201, created.text
    tenant_id = created.json()["tenant_id"]
    issued = await client.post(
        f"/v1/admin/tenants/{tenant_id}/api-keys", json={"role": "writer"}, headers=OPERATOR
    )
    assert issued.status_code == 201
    key = issued.json()["key"]
    headers = {"Authorization": f"Bearer {key}"}
    assert (await client.post("/v1/sessions", json={}, headers=headers)).status_code == 201

    revoked = await client.delete(
        f"/v1/admin/api-keys/{issued.json()['api_key_id']}", headers=OPERATOR
    )
    assert revoked.status_code == 204
    assert (await client.get("/v1/sessions", headers=headers)).status_code == 401

    missing = await client.post(
        f"/v1/admin/tenants/{uuid.uuid4()}/api-keys", json={"role": "writer"}, headers=OPERATOR
    )
    assert missing.status_code == 404
    unknown_key = await client.delete(f"/v1/admin/api-keys/{uuid.uuid4()}", headers=OPERATOR)
    assert unknown_key.status_code == 404


async def test_admin_routes_refuse_tenant_keys_and_no_token(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    as_tenant = await client.post(
        "/v1/admin/tenants", json={"name": "x"}, headers=TenantKeys.headers(tenant.admin)
    )
    assert as_tenant.status_code == 401
    assert (await client.post("/v1/admin/tenants", json={"name": "x"})).status_code == 401
    bad_role = await client.post(
        f"/v1/admin/tenants/{tenant.tenant_id}/api-keys", json={"role": "root"}, headers=OPERATOR
    )
    assert bad_role.status_code == 422


async def test_user_bound_key_sees_only_its_user(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    issued = await client.post(
        f"/v1/admin/tenants/{tenant.tenant_id}/api-keys",
        json={"role": "writer", "user_id": "alice"},
        headers=OPERATOR,
    )
    alice = {"Authorization": f"Bearer {issued.json()['key']}"}
    bobs = await create_session(client, tenant, user_id="bob")
    own = await client.post("/v1/sessions", json={}, headers=alice)
    assert own.status_code == 201
    assert own.json()["user_id"] == "alice"
    assert (
        await client.post("/v1/sessions", json={"user_id": "bob"}, headers=alice)
    ).status_code == 403
    assert (await client.get(f"/v1/sessions/{bobs}", headers=alice)).status_code == 404
    append = await client.post(
        f"/v1/sessions/{bobs}/messages", json={"role": "user", "content": "x"}, headers=alice
    )
    assert append.status_code == 404
    own_append = await client.post(
        f"/v1/sessions/{own.json()['id']}/messages",
        json={"role": "user", "content": "x"},
        headers=alice,
    )
    assert own_append.status_code == 201
    # A query parameter naming another user never widens what the key sees.
    listed = await client.get("/v1/sessions", params={"user_id": "bob"}, headers=alice)
    assert listed.json()["items"] == []


TENANT_TABLES = [
    "agent_sessions",
    "messages",
    "api_keys",
    "tenants",
    "archives",
    "wm_section_versions",
    "idempotency_keys",
]


@pytest.mark.parametrize("table", TENANT_TABLES)
async def test_rls_holds_when_the_code_forgets_its_filter(
    client: httpx.AsyncClient,
    database: Database,
    admin_database: Database,
    tenant: TenantKeys,
    other_tenant: TenantKeys,
    table: str,
) -> None:
    for keys in (tenant, other_tenant):
        agent_session_id = await create_session(client, keys)
        await client.post(
            f"/v1/sessions/{agent_session_id}/messages",
            json={"role": "user", "content": "hello"},
            headers=keys.write,
        )
        await client.post(
            f"/v1/sessions/{agent_session_id}/commit",
            json={"keep_recent_count": 0, "wait": True},
            headers={**keys.write, "Idempotency-Key": f"commit-{agent_session_id}"},
        )
    async with admin_database.unscoped() as db:
        everyone = set(
            (await db.execute(text(f"SELECT DISTINCT tenant_id FROM {table}"))).scalars()  # noqa: S608
        )
    assert {tenant.tenant_id, other_tenant.tenant_id} <= everyone

    # The application's own login: forced row-level security, whatever the query forgets.
    async with database.tenant(tenant.tenant_id) as db:
        seen = set(
            (await db.execute(text(f"SELECT DISTINCT tenant_id FROM {table}"))).scalars()  # noqa: S608
        )
        login = (
            await db.execute(
                text(
                    "SELECT session_user, current_user, rolsuper, rolbypassrls FROM pg_roles"
                    " WHERE rolname = session_user"
                )
            )
        ).one()
    assert seen == {tenant.tenant_id}
    assert tuple(login) == ("workmem_app", "workmem_app", False, False)
    async with database.unscoped() as db:
        unscoped = (await db.execute(text(f"SELECT count(*) FROM {table}"))).scalar()  # noqa: S608
    assert unscoped == 0, "without a tenant, a tenant table shows no row at all"


async def test_rls_is_forced_on_every_tenant_table(admin_database: Database) -> None:
    async with admin_database.unscoped() as db:
        rows = (
            await db.execute(
                text(
                    "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity FROM pg_class c"
                    " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id'"
                    " WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace"
                )
            )
        ).all()
    # auditor_logins maps auditor roles to their tenant; the operator writes it, not the API.
    assert sorted(row[0] for row in rows) == sorted(
        [
            *TENANT_TABLES,
            "agent_session_lineage",
            "api_key_prefixes",
            "archive_actions",
            "auditor_logins",
            "claimable_archives",
            "claimable_webhook_deliveries",
            "context_records",
            "memories",
            "memory_events",
            "message_redactions",
            "message_retractions",
            "model_calls",
            "pin_events",
            "pins",
            "prepared_generations",
            "receipt_keys",
            "retention_policies",
            "user_erasures",
            "user_memory_policies",
            "webhook_attempts",
            "webhook_deliveries",
            "webhook_subscriptions",
        ]
    )
    assert all(row[1] and row[2] for row in rows), rows


async def test_the_login_cannot_escape_its_tenant(database: Database, tenant: TenantKeys) -> None:
    from sqlalchemy.exc import DBAPIError

    async def attempt(statements: list[str]) -> None:
        async with database.tenant(tenant.tenant_id) as db:
            for statement in statements:
                await db.execute(text(statement))

    for escape in (
        ["SET LOCAL ROLE workmem_definer"],
        ["SET LOCAL row_security = off", "SELECT count(*) FROM agent_sessions"],
        ["SET LOCAL ROLE postgres"],
    ):
        with pytest.raises(DBAPIError):
            await attempt(escape)


async def test_rls_refuses_writes_into_another_tenant(
    database: Database, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    from sqlalchemy.exc import ProgrammingError

    with pytest.raises(ProgrammingError, match="row-level security"):
        async with database.tenant(tenant.tenant_id) as db:
            await db.execute(
                text("INSERT INTO agent_sessions (tenant_id) VALUES (:other)"),
                {"other": other_tenant.tenant_id},
            )
