"""Redacting a message: the pasted secret leaves every place it was stored or indexed, live or
archived; the redaction is recorded; retracted and redacted messages are marked."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy import text

from app.db import Database
from tests.audit.pages import sign_in
from tests.conftest import AppFactory, TenantKeys
from tests.support.api import create_session
from tests.support.scan import tables_holding

SECRET = "hunter2"
MESSAGES = [
    {"role": "user", "content": "Please fix app/billing/invoice.py, the totals are wrong."},
    {"role": "assistant", "content": "Looking at app/billing/invoice.py now."},
    {"role": "user", "content": f"I prefer green tea; my login password={SECRET} too."},
    {"role": "assistant", "content": "Noted, green tea it is."},
]


async def redact(
    client: httpx.AsyncClient, keys: TenantKeys, sid: str, seq: int, **body: Any
) -> httpx.Response:
    return await client.post(
        f"/v1/sessions/{sid}/messages/{seq}:redact", json=body or None, headers=keys.write
    )


async def seeded(client: httpx.AsyncClient, keys: TenantKeys) -> str:
    """The secret in message 3, appended with an idempotency key, pinned, then archived."""
    sid = await create_session(client, keys, user_id=f"user-{uuid.uuid4().hex[:6]}")
    appended = await client.post(
        f"/v1/sessions/{sid}/messages:batch",
        json={"messages": MESSAGES},
        headers={**keys.write, "Idempotency-Key": f"append-{sid}"},
    )
    assert appended.status_code == 201, appended.text
    pinned = await client.post(
        f"/v1/sessions/{sid}/pins", json={"message_seq": 3}, headers=keys.write
    )
    assert pinned.status_code == 201, pinned.text
    committed = await client.post(
        f"/v1/sessions/{sid}/commit",
        json={"keep_recent_count": 0, "wait": True},
        headers=keys.write,
    )
    assert committed.json()["status"] == "done", committed.text
    return sid


async def what_the_api_shows(client: httpx.AsyncClient, keys: TenantKeys, sid: str) -> str:
    pages = [
        await client.get(f"/v1/sessions/{sid}/messages", headers=keys.read),
        await client.get(f"/v1/sessions/{sid}/archives/1", headers=keys.read),
        await client.get(f"/v1/sessions/{sid}/archives", headers=keys.read),
        await client.get(f"/v1/sessions/{sid}/working-memory", headers=keys.read),
        await client.get(f"/v1/sessions/{sid}/working-memory/history", headers=keys.read),
        await client.get(f"/v1/sessions/{sid}/context", headers=keys.read),
        await client.get(f"/v1/sessions/{sid}/pins", headers=keys.read),
        await client.get("/v1/memories", headers=keys.read),
        await client.get("/v1/memories/search", params={"q": "green tea"}, headers=keys.read),
    ]
    for page in pages:
        assert page.status_code == 200, (page.url, page.text)
    return "\n".join(page.text for page in pages)


async def what_the_ui_shows(http: httpx.AsyncClient, keys: TenantKeys, sid: str) -> str:
    await sign_in(http, keys.reader)
    pages = [
        await http.get(f"/ui/sessions/{sid}"),
        await http.get(f"/ui/sessions/{sid}/archives/1"),
        await http.get(f"/ui/sessions/{sid}/archives/1/messages"),
    ]
    for page in pages:
        assert page.status_code == 200, (page.url, page.text)
    return "\n".join(page.text for page in pages)


async def search(client: httpx.AsyncClient, keys: TenantKeys, sid: str, q: str) -> list[int]:
    found = await client.get(
        f"/v1/sessions/{sid}/history/search", params={"q": q}, headers=keys.read
    )
    assert found.status_code == 200, found.text
    return [hit["seq"] for hit in found.json()["items"]]


async def test_a_pasted_secret_leaves_everything_once_redacted(
    client: httpx.AsyncClient,
    tenant: TenantKeys,
    admin_database: Database,
    app_client: AppFactory,
    database: Database,
) -> None:
    sid = await seeded(client, tenant)
    # Before: the secret is everywhere the repro found it.
    assert await search(client, tenant, sid, SECRET) == [3]
    assert SECRET in await what_the_api_shows(client, tenant, sid)
    before = await tables_holding(admin_database, SECRET)
    assert {"messages.content_text", "wm_section_versions.content", "archives.overview"} <= set(
        before
    ), before
    assert {"memories.content", "pins.text", "idempotency_keys.response_body"} <= set(before)

    redacted = await redact(client, tenant, sid, 3, reason="a password pasted by mistake")
    assert redacted.status_code == 200, redacted.text
    body = redacted.json()
    assert (body["seq"], body["role"], body["archived"], body["already_redacted"]) == (
        3,
        "user",
        True,
        False,
    )
    assert body["reason"] == "a password pasted by mistake"
    assert body["redacted"]["working_memory_items"] >= 1
    assert body["redacted"]["memories"] == 1
    assert body["redacted"]["pins"] == 1
    assert body["redacted"]["idempotency_answers"] == 1

    # After: nothing shows it, nothing finds it, no table holds it.
    assert await search(client, tenant, sid, SECRET) == []
    assert await search(client, tenant, sid, "password") == []
    shown = await what_the_api_shows(client, tenant, sid)
    assert SECRET not in shown
    assert "[redacted]" in shown
    async with app_client(database) as browser:
        ui = await what_the_ui_shows(browser, tenant, sid)
        searched = await browser.get(f"/ui/sessions/{sid}/search", params={"q": SECRET})
    assert SECRET not in ui
    assert 'class="mark redacted"' in ui
    # The search page repeats the query, and finds it nowhere.
    assert "was never in this agent session's working memory" in searched.text
    assert await tables_holding(admin_database, SECRET) == []

    # The message keeps its seq, role, turn and token count, and is marked.
    listed = (await client.get(f"/v1/sessions/{sid}/messages", headers=tenant.read)).json()
    third = listed["items"][2]
    assert (third["seq"], third["role"], third["message"]) == (
        3,
        "user",
        {"role": "user", "content": "[redacted]"},
    )
    assert third["redacted_at"] is not None
    assert [item["redacted_at"] is None for item in listed["items"]] == [True, True, False, True]
    # What the other messages gave the working memory stays.
    memory = (await client.get(f"/v1/sessions/{sid}/working-memory", headers=tenant.read)).json()
    assert "app/billing/invoice.py" in memory["markdown"]

    # The redaction row: who, when, why; the key is the writer's.
    async with admin_database.unscoped() as db:
        row = (
            await db.execute(
                text(
                    "SELECT r.redacted_by, r.reason, k.role FROM message_redactions r "
                    "JOIN api_keys k ON k.api_key_id = r.redacted_by "
                    "WHERE r.agent_session_id = :sid AND r.seq = 3"
                ),
                {"sid": sid},
            )
        ).one()
    assert (str(row.redacted_by), row.reason, row.role) == (
        body["redacted_by"],
        "a password pasted by mistake",
        "writer",
    )

    # Again: nothing changes; the first redaction is answered.
    again = await redact(client, tenant, sid, 3)
    assert again.status_code == 200
    assert again.json()["already_redacted"] is True
    assert again.json()["redacted_at"] == body["redacted_at"]
    assert again.json()["reason"] == "a password pasted by mistake"
    # The idempotent retry of the append is still answered, without the secret.
    replayed = await client.post(
        f"/v1/sessions/{sid}/messages:batch",
        json={"messages": MESSAGES},
        headers={**tenant.write, "Idempotency-Key": f"append-{sid}"},
    )
    assert replayed.status_code == 201
    assert SECRET not in replayed.text
    assert "[redacted]" in replayed.text

    # Deleting the agent session deletes its redactions with it.
    deleted = await client.delete(f"/v1/sessions/{sid}", headers=tenant.write)
    assert deleted.status_code == 204
    async with admin_database.unscoped() as db:
        left = await db.scalar(
            text("SELECT count(*) FROM message_redactions WHERE agent_session_id = :sid"),
            {"sid": sid},
        )
    assert left == 0


async def test_a_live_message_is_redacted_and_the_next_working_memory_never_sees_it(
    client: httpx.AsyncClient, tenant: TenantKeys, admin_database: Database
) -> None:
    sid = await create_session(client, tenant)
    secret = f"s3cr3t-{uuid.uuid4().hex[:8]}"
    appended = await client.post(
        f"/v1/sessions/{sid}/messages:batch",
        json={
            "messages": [
                {"role": "user", "content": "Please fix app/billing/invoice.py."},
                {"role": "user", "content": f"the token is {secret}"},
            ]
        },
        headers=tenant.write,
    )
    assert appended.status_code == 201
    done = await redact(client, tenant, sid, 2)
    assert done.status_code == 200, done.text
    assert done.json()["archived"] is False
    assert done.json()["reason"] is None
    context = await client.get(f"/v1/sessions/{sid}/context", headers=tenant.read)
    assert secret not in context.text
    assert "[redacted]" in context.text
    committed = await client.post(
        f"/v1/sessions/{sid}/commit",
        json={"keep_recent_count": 0, "wait": True},
        headers=tenant.write,
    )
    assert committed.json()["status"] == "done"
    assert secret not in committed.text
    assert await tables_holding(admin_database, secret) == []


async def test_a_tool_call_keeps_its_ids_and_loses_its_arguments(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "login", "arguments": '{"password": "hunter2"}'},
    }
    appended = await client.post(
        f"/v1/sessions/{sid}/messages:batch",
        json={
            "messages": [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": "logged in with hunter2"},
            ]
        },
        headers=tenant.write,
    )
    assert appended.status_code == 201, appended.text
    assert (await redact(client, tenant, sid, 1)).status_code == 200
    assert (await redact(client, tenant, sid, 2)).status_code == 200
    listed = (await client.get(f"/v1/sessions/{sid}/messages", headers=tenant.read)).json()
    assert [item["message"] for item in listed["items"]] == [
        {
            "role": "assistant",
            "content": "[redacted]",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "login", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "[redacted]"},
    ]
    context = await client.get(f"/v1/sessions/{sid}/context", headers=tenant.read)
    assert context.status_code == 200
    assert "hunter2" not in context.text


async def test_what_cannot_be_redacted(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    sid = await create_session(client, tenant)
    await client.post(
        f"/v1/sessions/{sid}/messages",
        json={"role": "user", "content": "one"},
        headers=tenant.write,
    )
    assert (await redact(client, tenant, sid, 2)).status_code == 404
    assert (await redact(client, tenant, str(uuid.uuid4()), 1)).status_code == 404
    assert (await redact(client, other_tenant, sid, 1)).status_code == 404
    assert (await redact(client, tenant, sid, 0)).status_code == 422
    long_reason = await redact(client, tenant, sid, 1, reason="x" * 1001)
    assert long_reason.status_code == 422
    unknown = await client.post(
        f"/v1/sessions/{sid}/messages/1:redact", json={"why": "x"}, headers=tenant.write
    )
    assert unknown.status_code == 422
    reader = await client.post(
        f"/v1/sessions/{sid}/messages/1:redact", json={}, headers=tenant.read
    )
    assert reader.status_code == 403
    # Nothing was stored by the refused requests.
    listed = (await client.get(f"/v1/sessions/{sid}/messages", headers=tenant.read)).json()
    assert listed["items"][0]["message"] == {"role": "user", "content": "one"}
    assert listed["items"][0]["redacted_at"] is None


async def test_retracted_messages_are_marked_in_the_list_and_in_ui(
    client: httpx.AsyncClient, tenant: TenantKeys, app_client: AppFactory, database: Database
) -> None:
    sid = await create_session(client, tenant)
    await client.post(
        f"/v1/sessions/{sid}/messages:batch",
        json={"messages": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]},
        headers=tenant.write,
    )
    withdrawn = await client.post(
        f"/v1/sessions/{sid}/messages:retract", json={"seq": 2}, headers=tenant.write
    )
    assert withdrawn.status_code == 200
    listed = (await client.get(f"/v1/sessions/{sid}/messages", headers=tenant.read)).json()
    assert [item["retracted_at"] is not None for item in listed["items"]] == [False, True]
    assert listed["items"][1]["retracted_at"] == withdrawn.json()["retracted_at"]
    committed = await client.post(
        f"/v1/sessions/{sid}/commit",
        json={"keep_recent_count": 0, "wait": True},
        headers=tenant.write,
    )
    assert committed.json()["status"] == "done"
    async with app_client(database) as browser:
        await sign_in(browser, tenant.reader)
        page = await browser.get(f"/ui/sessions/{sid}/archives/1/messages")
    assert page.status_code == 200
    assert page.text.count('class="mark retracted"') == 1
    assert 'class="mark redacted"' not in page.text


async def test_a_redacted_memory_keeps_no_vector_and_no_search_finds_it_by_meaning(
    client: httpx.AsyncClient, tenant: TenantKeys, admin_database: Database, database: Database
) -> None:
    """The memory's vector was made from the secret's text: it goes with the text, no vector
    search compares the memory again, and re-embedding passes it by."""
    from app.memories.jobs import MemoryJobService

    sid = await seeded(client, tenant)
    before = await client.get(
        "/v1/memories/search", params={"q": "green tea", "min_score": 0}, headers=tenant.read
    )
    found = [hit["id"] for hit in before.json()["items"]]
    assert len(found) == 1, before.text
    redacted = await redact(client, tenant, sid, 3)
    assert redacted.json()["redacted"]["memories"] == 1
    async with admin_database.unscoped() as db:
        row = (
            await db.execute(
                text(
                    "SELECT embedding IS NULL AS gone, embedding_model, content FROM memories "
                    "WHERE tenant_id = :tenant_id AND memory_id = :memory_id"
                ),
                {"tenant_id": tenant.tenant_id, "memory_id": found[0]},
            )
        ).one()
    assert (row.gone, row.embedding_model, row.content) == (True, "[redacted]", "[redacted]")
    after = await client.get(
        "/v1/memories/search", params={"q": "green tea", "min_score": 0}, headers=tenant.read
    )
    assert after.status_code == 200, after.text
    assert found[0] not in [hit["id"] for hit in after.json()["items"]]
    shown = await client.get(f"/v1/memories/{found[0]}", headers=tenant.read)
    assert shown.json()["content"] == "[redacted]"
    async with database.tenant(tenant.tenant_id) as db:
        jobs = MemoryJobService(db, tenant.tenant_id)
        assert await jobs.count_stale("another-embedder") == 0
        assert await jobs.stale("another-embedder", after=None, limit=10) == []
