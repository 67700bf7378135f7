"""Every validation rule of an append answers 4xx and stores nothing (DESIGN 5)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.conftest import TenantKeys
from tests.support.api import create_session
from tests.support.fake_openai import check_chat_request
from tests.support.messages import BAD_MESSAGES, GOOD_PARTS, TOOL_CALL


@pytest.mark.parametrize(("case", "message"), GOOD_PARTS, ids=[c[0] for c in GOOD_PARTS])
async def test_parts_each_role_may_carry_are_stored_as_sent(
    client: httpx.AsyncClient, tenant: TenantKeys, case: str, message: dict[str, Any]
) -> None:
    agent_session_id = await create_session(client, tenant)
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages", json=message, headers=tenant.write
    )
    assert response.status_code == 201, (case, response.text)
    assert response.json()["message"]["message"]["content"] == message["content"]


async def stored_count(client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str) -> int:
    response = await client.get(f"/v1/sessions/{agent_session_id}", headers=keys.read)
    count: int = response.json()["message_count"]
    return count


@pytest.mark.parametrize(
    ("case", "message", "status"), BAD_MESSAGES, ids=[c[0] for c in BAD_MESSAGES]
)
async def test_bad_single_message_is_refused(
    client: httpx.AsyncClient,
    tenant: TenantKeys,
    case: str,
    message: dict[str, Any],
    status: int,
) -> None:
    agent_session_id = await create_session(client, tenant)
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages", json=message, headers=tenant.write
    )
    assert response.status_code == status, (case, response.text)
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == status
    assert "Traceback" not in response.text
    if status == 422:
        assert problem["errors"], problem
    assert await stored_count(client, tenant, agent_session_id) == 0


@pytest.mark.parametrize(
    ("case", "message", "status"), BAD_MESSAGES, ids=[c[0] for c in BAD_MESSAGES]
)
async def test_batch_with_one_bad_message_stores_nothing(
    client: httpx.AsyncClient,
    tenant: TenantKeys,
    case: str,
    message: dict[str, Any],
    status: int,
) -> None:
    agent_session_id = await create_session(client, tenant)
    good = {"role": "user", "content": "fine"}
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={"messages": [good, good, message, good]},
        headers=tenant.write,
    )
    assert response.status_code == status, (case, response.text)
    assert await stored_count(client, tenant, agent_session_id) == 0


async def test_batch_limit_and_empty_batch(
    client: httpx.AsyncClient, tenant: TenantKeys, settings: Settings, database: Database
) -> None:
    agent_session_id = await create_session(client, tenant)
    empty = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={"messages": []},
        headers=tenant.write,
    )
    assert empty.status_code == 422
    over = [{"role": "user", "content": "x"}] * (settings.max_batch_messages + 1)
    too_many = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={"messages": over},
        headers=tenant.write,
    )
    assert too_many.status_code == 413
    assert await stored_count(client, tenant, agent_session_id) == 0
    exactly = [{"role": "user", "content": "x"}] * settings.max_batch_messages
    accepted = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={"messages": exactly},
        headers=tenant.write,
    )
    assert accepted.status_code == 201
    assert await stored_count(client, tenant, agent_session_id) == settings.max_batch_messages


async def test_malformed_json_body(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    agent_session_id = await create_session(client, tenant)
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        content=b'{"role": "user", "content": ',
        headers={**tenant.write, "content-type": "application/json"},
    )
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert await stored_count(client, tenant, agent_session_id) == 0


async def test_configured_message_limit(settings: Settings, database: Database) -> None:
    from asgi_lifespan import LifespanManager

    from tests.conftest import make_tenant

    small = settings.model_copy(update={"max_message_bytes": 2048})
    app = create_app(small, database=database)
    keys = await make_tenant(database)
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://t"
        ) as http,
    ):
        agent_session_id = await create_session(http, keys)
        fits = await http.post(
            f"/v1/sessions/{agent_session_id}/messages",
            json={"role": "user", "content": "y" * 1900},
            headers=keys.write,
        )
        assert fits.status_code == 201
        too_big = await http.post(
            f"/v1/sessions/{agent_session_id}/messages",
            json={"role": "user", "content": "y" * 2100},
            headers=keys.write,
        )
        assert too_big.status_code == 413
        assert await stored_count(http, keys, agent_session_id) == 1


@pytest.mark.parametrize(
    "raw",
    [
        b'{"role": "user", "content": "lone \\ud800 surrogate"}',
        b'{"role": "user", "content": "ok", "metadata": {"\\udfff": 1}}',
        b'{"role": "user", "content": [{"type": "text", "text": "\\u0000"}]}',
    ],
)
async def test_unstorable_text_is_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, raw: bytes
) -> None:
    agent_session_id = await create_session(client, tenant)
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        content=raw,
        headers={**tenant.write, "content-type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert await stored_count(client, tenant, agent_session_id) == 0


@pytest.mark.parametrize(
    "raw",
    [
        b'{"external_id": "a\\u0000b"}',
        b'{"metadata": {"k\\u0000": 1}}',
        b'{"metadata": {"k": ["\\ud83d"]}}',
    ],
)
async def test_unstorable_session_fields_are_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, raw: bytes
) -> None:
    response = await client.post(
        "/v1/sessions", content=raw, headers={**tenant.write, "content-type": "application/json"}
    )
    assert response.status_code == 422, response.text


@pytest.mark.parametrize(
    "path",
    [
        "/archives?before_seq=60204886248568720982016",
        "/archives/18446744073709551616",
        "/archives/2147483648:retry",
        "/messages?after_seq=9223372036854775808",
        "/working-memory/history?after_archive_seq=2147483648",
    ],
)
async def test_out_of_range_numbers_are_422(
    client: httpx.AsyncClient, tenant: TenantKeys, path: str
) -> None:
    agent_session_id = await create_session(client, tenant)
    method = "POST" if path.endswith(":retry") else "GET"
    response = await client.request(
        method, f"/v1/sessions/{agent_session_id}{path}", headers=tenant.write
    )
    assert response.status_code == 422, response.text


async def test_stored_parts_reach_a_strict_chat_server_intact(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    """What the append accepted, the chat-completions request built from the context accepts."""
    agent_session_id = await create_session(client, tenant)
    by_case = dict(GOOD_PARTS)
    conversation = [
        by_case["text parts from a system message"],
        by_case["text and image from a user"],
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        by_case["text parts from a tool"],
        by_case["a refusal from the assistant"],
        by_case["audio and a file from a user"],
    ]
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={"messages": conversation},
        headers=tenant.write,
    )
    assert response.status_code == 201, response.text
    context = await client.get(f"/v1/sessions/{agent_session_id}/context", headers=tenant.read)
    messages = context.json()["messages"]
    assert [m["content"] for m in messages] == [m["content"] for m in conversation]
    check_chat_request({"model": "m", "messages": messages})
