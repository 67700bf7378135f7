"""Messages through /api/v1: one or a batch of up to 100, auto-creating the session, in parts
format, and nothing stored when anything is refused."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.db import Database
from app.tenancy import service as tenancy
from app.tenancy.principal import Role
from tests.compat.helpers import API, append, failed, ok, user, validation_locs
from tests.conftest import AppFactory, TenantKeys
from tests.support.servers import Server

TOOL_PART = {
    "type": "tool",
    "tool_id": "call_7",
    "tool_name": "run_tests",
    "tool_input": {"path": "tests/"},
    "tool_output": "1 failed: KeyError: 'email'",
    "tool_status": "completed",
}


async def v1_messages(
    http: httpx.AsyncClient, tenant: TenantKeys, session_id: str
) -> list[dict[str, Any]]:
    listed = await http.get("/v1/sessions", params={"external_id": session_id}, headers=tenant.read)
    items = listed.json()["items"]
    if not items:
        return []
    read = await http.get(f"/v1/sessions/{items[0]['id']}/messages", headers=tenant.read)
    messages: list[dict[str, Any]] = read.json()["items"]
    return messages


async def test_a_message_auto_creates_its_session(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    added = ok(
        await client.post(
            f"{API}/sessions/fresh/messages",
            json=user("Fix app/models/user.py"),
            headers=tenant.write,
        )
    )
    assert added["session_id"] == "fresh"
    assert added["message_count"] == 1
    [stored] = await v1_messages(client, tenant, "fresh")
    # A new session keeps nothing back: its first message is pending at once.
    assert added["pending_tokens"] == stored["token_count"] > 0
    assert stored["message"] == {"role": "user", "content": "Fix app/models/user.py"}

    again = ok(
        await client.post(
            f"{API}/sessions/fresh/messages",
            json={"role": "assistant", "parts": [{"type": "text", "text": "On it."}, TOOL_PART]},
            headers=tenant.write,
        )
    )
    # A tool part is stored as the assistant's call plus the tool's result.
    assert again["message_count"] == 3
    roles = [m["message"]["role"] for m in await v1_messages(client, tenant, "fresh")]
    assert roles == ["user", "assistant", "tool"]


async def test_a_batch_auto_creates_its_session_and_counts_what_was_sent(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    added = await append(
        client,
        tenant.write,
        "batched",
        user("How do I authenticate users?"),
        {"role": "assistant", "content": "Use OAuth 2.0.", "created_at": "2023-05-08T14:00:00Z"},
        {"role": "user", "parts": [TOOL_PART], "message_kind": "tool_transport"},
    )
    assert added == {
        "session_id": "batched",
        "message_count": 4,
        "pending_tokens": added["pending_tokens"],
        "added": 3,
    }
    stored = await v1_messages(client, tenant, "batched")
    assert [m["message"]["role"] for m in stored] == ["user", "assistant", "assistant", "tool"]
    assert stored[1]["created_at"] == "2023-05-08T14:00:00Z"
    assert stored[2]["metadata"]["openviking"]["role"] == "user"
    assert added["pending_tokens"] == sum(m["token_count"] for m in stored)


@pytest.mark.parametrize(("count", "accepted"), [(1, True), (99, True), (100, True), (101, False)])
async def test_at_most_100_messages_per_batch(
    client: httpx.AsyncClient, tenant: TenantKeys, count: int, accepted: bool
) -> None:
    messages = [user(f"message {index}") for index in range(count)]
    response = await client.post(
        f"{API}/sessions/sized/messages/batch", json={"messages": messages}, headers=tenant.write
    )
    if accepted:
        assert ok(response)["added"] == count
    else:
        error = failed(response, "INVALID_ARGUMENT", 400)
        assert validation_locs(error) == [["body", "messages"]]
        assert await v1_messages(client, tenant, "sized") == []


@pytest.mark.parametrize(
    ("message", "loc"),
    [
        ({"role": "user"}, ["body", "messages", 1]),
        ({"role": "system", "content": "x"}, ["body", "messages", 1, "role"]),
        ({"role": "user", "parts": [{"type": "video"}]}, ["body", "messages", 1, "parts", 0]),
        (
            {"role": "user", "content": "x", "created_at": "soon"},
            ["body", "messages", 1, "created_at"],
        ),
    ],
)
async def test_an_invalid_message_stores_nothing_not_even_the_session(
    client: httpx.AsyncClient, tenant: TenantKeys, message: dict[str, Any], loc: list[Any]
) -> None:
    response = await client.post(
        f"{API}/sessions/atomic/messages/batch",
        json={"messages": [user("fine"), message]},
        headers=tenant.write,
    )
    error = failed(response, "INVALID_ARGUMENT", 400)
    assert [got[: len(loc)] for got in validation_locs(error)][:1] == [loc]
    assert await v1_messages(client, tenant, "atomic") == []
    empty = await client.post(
        f"{API}/sessions/atomic/messages/batch", json={"messages": []}, headers=tenant.write
    )
    failed(empty, "INVALID_ARGUMENT", 400)


async def test_text_that_cannot_be_stored_is_refused_with_nothing_stored(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    response = await client.post(
        f"{API}/sessions/nul/messages", json=user("a\u0000b"), headers=tenant.write
    )
    error = failed(response, "INVALID_ARGUMENT", 400)
    assert error["details"]["validation_errors"][0]["type"] == "unstorable_text"
    failed(await client.get(f"{API}/sessions/nul", headers=tenant.read), "NOT_FOUND", 404)


async def test_a_reader_key_cannot_append(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    response = await client.post(f"{API}/sessions/ro/messages", json=user("x"), headers=tenant.read)
    failed(response, "PERMISSION_DENIED", 403)
    failed(await client.get(f"{API}/sessions/ro", headers=tenant.read), "NOT_FOUND", 404)


async def test_concurrent_first_messages_create_one_session(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    responses = await asyncio.gather(
        *(
            client.post(f"{API}/sessions/raced/messages", json=user(f"m{i}"), headers=tenant.write)
            for i in range(6)
        )
    )
    assert sorted(ok(response)["message_count"] for response in responses) == [1, 2, 3, 4, 5, 6]
    listed = await client.get("/v1/sessions", params={"external_id": "raced"}, headers=tenant.read)
    assert len(listed.json()["items"]) == 1


async def test_a_name_another_user_took_is_a_session_of_ones_own(
    database: Database, app_client: AppFactory
) -> None:
    """Names are unique per user: a second user of the same name gets an agent session of
    its own, and learns nothing about the first one's (no 409 that would reveal it)."""
    async with database.unscoped() as db:
        created = await tenancy.create_tenant(db, "two-users")
        _, alice = await tenancy.issue_key(db, created.tenant_id, role=Role.WRITER, user_id="alice")
        _, bob = await tenancy.issue_key(db, created.tenant_id, role=Role.WRITER, user_id="bob")
    async with app_client(database) as http:
        as_alice = {"X-API-Key": alice}
        as_bob = {"X-API-Key": bob}
        ok(
            await http.post(
                f"{API}/sessions/shared-name/messages", json=user("a"), headers=as_alice
            )
        )
        own = await http.post(
            f"{API}/sessions/shared-name/messages", json=user("b"), headers=as_bob
        )
        assert ok(own)["message_count"] == 1
        bobs = ok(await http.get(f"{API}/sessions/shared-name", headers=as_bob))
        assert (bobs["total_message_count"], bobs["user"]["user_id"]) == (1, "bob")
        # OpenViking's identity headers name users too; they never widen what a key sees.
        widened = {
            **as_bob,
            "X-OpenViking-User": "alice",
            "X-OpenViking-Account": str(uuid.uuid4()),
        }
        seen = ok(await http.get(f"{API}/sessions/shared-name", headers=widened))
        assert seen["user"]["user_id"] == "bob"
        assert [
            item["session_id"] for item in ok(await http.get(f"{API}/sessions", headers=widened))
        ] == ["shared-name"]
        mine = ok(await http.get(f"{API}/sessions/shared-name", headers=as_alice))
        assert (mine["total_message_count"], mine["user"]["user_id"]) == (1, "alice")


async def test_a_tool_id_repeated_across_appends_gets_a_call_id_of_its_own(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    """Model APIs refuse a conversation that repeats a call id; OpenViking's clients may repeat
    a tool_id from one message to the next. The stored calls differ, the parts read back as
    sent."""
    for _ in range(3):
        await append(client, tenant.write, "repeats", {"role": "assistant", "parts": [TOOL_PART]})
    stored = await v1_messages(client, tenant, "repeats")
    calls = [m["message"]["tool_calls"][0]["id"] for m in stored if m["role"] == "assistant"]
    assert calls == ["call_7", "call_7_2", "call_7_3"]
    answers = [m["message"]["tool_call_id"] for m in stored if m["role"] == "tool"]
    assert answers == calls
    context = ok(await client.get(f"{API}/sessions/repeats/context", headers=tenant.read))
    tool_ids = [part["tool_id"] for m in context["messages"] for part in m["parts"]]
    assert tool_ids == ["call_7"] * 3


@pytest.mark.parametrize("name", ["concurrent-tools", "concurrent-tools-new"])
async def test_concurrent_appends_with_tool_parts_never_repeat_a_call_id(
    client: httpx.AsyncClient, tenant: TenantKeys, name: str
) -> None:
    """Appends racing to one session (existing or not yet created), each repeating the same
    tool_id twice: every stored call id of the session is used once, answered once."""
    if name == "concurrent-tools":
        await append(client, tenant.write, name, user("Run the tests"))
    message = {"role": "assistant", "parts": [TOOL_PART, TOOL_PART]}
    responses = await asyncio.gather(
        *(
            client.post(f"{API}/sessions/{name}/messages", json=message, headers=tenant.write)
            for _ in range(12)
        )
    )
    for response in responses:
        ok(response)
    stored = await v1_messages(client, tenant, name)
    calls = [
        call["id"]
        for m in stored
        if m["role"] == "assistant"
        for call in m["message"]["tool_calls"]
    ]
    assert len(calls) == 24
    assert len(set(calls)) == 24, sorted(calls)
    answers = sorted(m["message"]["tool_call_id"] for m in stored if m["role"] == "tool")
    assert answers == sorted(calls)


@pytest.mark.e2e
def test_appends_with_tool_parts_from_threads_to_two_server_processes(tmp_path: Path) -> None:
    """The same race across processes: threads posting to ``workmem serve --workers 2``, whose
    two processes share nothing but the database."""
    server = Server(tmp_path / "home", "--workers", "2")
    try:
        server.wait_ready()
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        message = {"role": "assistant", "parts": [TOOL_PART, TOOL_PART]}

        def post(_: int) -> int:
            with httpx.Client(
                base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60
            ) as http:
                return http.post(f"{API}/sessions/threads/messages", json=message).status_code

        with ThreadPoolExecutor(max_workers=8) as pool:
            assert list(pool.map(post, range(16))) == [200] * 16
        with httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as http:
            [item] = http.get("/v1/sessions", params={"external_id": "threads"}).json()["items"]
            listed = http.get(f"/v1/sessions/{item['id']}/messages", params={"limit": 200})
            stored = listed.json()["items"]
    finally:
        log = server.stop()
    calls = [
        call["id"]
        for m in stored
        if m["role"] == "assistant"
        for call in m["message"]["tool_calls"]
    ]
    assert len(calls) == len(set(calls)) == 32, sorted(calls)
    answers = sorted(m["message"]["tool_call_id"] for m in stored if m["role"] == "tool")
    assert answers == sorted(calls)
    assert '"level": "error"' not in log
