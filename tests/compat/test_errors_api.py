"""Every error under /api/v1 is OpenViking's envelope while /v1 keeps answering problem+json:
unknown routes, validation, authentication, roles, the database down, other tenants' ids."""

from __future__ import annotations

import httpx
import pytest

from app.db import Database
from tests.compat.helpers import API, append, commit, failed, ok, user
from tests.conftest import ADMIN_TOKEN, AppFactory, TenantKeys
from tests.support.servers import closed_port

PROBLEM = "application/problem+json"


def problem(response: httpx.Response, status: int, type_: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["type"] == type_


async def test_unknown_routes_and_methods(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    for path in ("/search/find", "/sessions/x/extract", "/", "/tasks"):
        response = await client.post(API + path, json={}, headers=tenant.write)
        error = failed(response, "NOT_FOUND", 404)
        assert error["details"] == {"resource": API + path, "type": "endpoint"}
    wrong_method = await client.put(f"{API}/sessions", json={}, headers=tenant.write)
    failed(wrong_method, "INVALID_ARGUMENT", 400)
    problem(await client.post("/v1/search/find", headers=tenant.write), 404, "not_found")


async def test_validation_errors_side_by_side(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    bad = {"role": "robot", "content": "x"}
    response = await client.post(f"{API}/sessions/v/messages", json=bad, headers=tenant.write)
    error = failed(response, "INVALID_ARGUMENT", 400)
    [item] = error["details"]["validation_errors"]
    assert (item["loc"], item["type"]) == (["body", "role"], "literal_error")
    assert item["msg"]
    not_json = await client.post(
        f"{API}/sessions/v/messages",
        content=b"{not json",
        headers={**tenant.write, "content-type": "application/json"},
    )
    failed(not_json, "INVALID_ARGUMENT", 400)

    created = await client.post("/v1/sessions", json={}, headers=tenant.write)
    v1 = await client.post(
        f"/v1/sessions/{created.json()['id']}/messages", json=bad, headers=tenant.write
    )
    problem(v1, 422, "validation_error")


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-API-Key": "wm_abcdefgh_" + "a" * 40},
        {"Authorization": "Bearer not-a-key"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
    ],
)
async def test_missing_or_wrong_keys_are_unauthenticated(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    failed(await client.get(f"{API}/sessions", headers=headers), "UNAUTHENTICATED", 401)
    failed(await client.get(f"{API}/tasks/x", headers=headers), "UNAUTHENTICATED", 401)
    problem(await client.get("/v1/sessions", headers=headers), 401, "unauthenticated")


async def test_both_key_headers_work(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    ok(await client.post(f"{API}/sessions/keyed/messages", json=user("a"), headers=tenant.write))
    by_header = await client.get(f"{API}/sessions/keyed", headers={"X-API-Key": tenant.reader})
    by_bearer = await client.get(f"{API}/sessions/keyed", headers=tenant.read)
    assert ok(by_header) == ok(by_bearer)


async def test_roles_and_the_operator_token(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await append(client, tenant.write, "guarded", user("a"))
    reader_commit = await client.post(f"{API}/sessions/guarded/commit", headers=tenant.read)
    failed(reader_commit, "PERMISSION_DENIED", 403)
    operator = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    failed(await client.get(f"{API}/sessions", headers=operator), "PERMISSION_DENIED", 403)
    problem(await client.get("/v1/sessions", headers=operator), 403, "forbidden")
    assert ok(await client.get(f"{API}/sessions/guarded", headers=tenant.read))["commit_count"] == 0


async def test_the_database_down_is_unavailable_side_by_side(app_client: AppFactory) -> None:
    url = f"postgresql+psycopg://nobody:secret@127.0.0.1:{closed_port()}/workmem"
    database = Database.from_url(url, pool_size=1)
    headers = {"X-API-Key": "wm_abcdefgh_" + "a" * 40}
    async with app_client(database) as http:
        response = await http.get(f"{API}/sessions/s/context", headers=headers)
        failed(response, "UNAVAILABLE", 503)
        assert "secret" not in response.text
        problem(await http.get("/v1/sessions", headers=headers), 503, "unavailable")
        assert (await http.get("/health")).json() == {"status": "ok"}
    await database.dispose()


async def test_another_tenants_sessions_archives_and_tasks_are_not_found(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    await append(client, tenant.write, "private", user("the secret is 4242"), user("more"))
    accepted = await commit(client, tenant.write, "private", keep=1)
    theirs = other_tenant.write
    for method, path in [
        ("GET", "/sessions/private"),
        ("GET", "/sessions/private/context"),
        ("GET", "/sessions/private/archives/archive_001"),
        ("POST", "/sessions/private/commit"),
        ("DELETE", "/sessions/private"),
        ("GET", f"/tasks/{accepted['task_id']}"),
    ]:
        response = await client.request(method, API + path, headers=theirs)
        failed(response, "NOT_FOUND", 404)
        assert "4242" not in response.text
    assert ok(await client.get(f"{API}/sessions", headers=theirs)) == []
    # The same name in another tenant is another session: appending creates theirs.
    ok(await client.post(f"{API}/sessions/private/messages", json=user("mine"), headers=theirs))
    assert (
        ok(await client.get(f"{API}/sessions/private", headers=theirs))["total_message_count"] == 1
    )
    ours = ok(await client.get(f"{API}/sessions/private", headers=tenant.read))
    assert (ours["total_message_count"], ours["commit_count"]) == (2, 1)
    task = ok(await client.get(f"{API}/tasks/{accepted['task_id']}", headers=tenant.read))
    assert task["status"] == "pending"
