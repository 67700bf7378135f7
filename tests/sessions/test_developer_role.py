"""OpenAI's ``developer`` role (what current SDKs send for instructions) is accepted wherever a
message is appended, filed as the system role's equivalent, kept as sent, and reaches a strict
chat-completions server through the real ``openai`` SDK as the context returns it."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from tests.conftest import TenantKeys
from tests.support.api import create_session
from tests.support.fake_openai import FakeOpenAI, check_chat_request, fake_openai

__all__ = ["fake_openai"]

DEVELOPER = {"role": "developer", "content": "Answer in one sentence. Never touch prod."}


@pytest.mark.parametrize(
    "content", ["Be brief.", [{"type": "text", "text": "Be brief."}]], ids=["text", "text parts"]
)
async def test_a_developer_message_is_stored_as_sent_and_filed_as_system(
    client: httpx.AsyncClient, tenant: TenantKeys, content: Any
) -> None:
    agent_session_id = await create_session(client, tenant)
    single = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "developer", "content": content},
        headers=tenant.write,
    )
    assert single.status_code == 201, single.text
    assert single.json()["message"]["role"] == "system"
    assert single.json()["message"]["message"] == {"role": "developer", "content": content}


async def test_a_developer_message_may_carry_only_text(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    refused = await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "developer", "content": [image]},
        headers=tenant.write,
    )
    assert refused.status_code == 422, refused.text
    assert "a developer message cannot carry a 'image_url' part" in refused.text


async def test_the_context_with_a_developer_message_reaches_a_strict_server(
    client: httpx.AsyncClient, tenant: TenantKeys, fake_openai: FakeOpenAI
) -> None:
    agent_session_id = await create_session(client, tenant)
    conversation = [
        DEVELOPER,
        {"role": "user", "content": "Fix the crash in app/models/user.py."},
        {"role": "assistant", "content": "Done: a default for email."},
        {"role": "user", "content": "Is a migration needed?"},
    ]
    batch = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={"messages": conversation},
        headers=tenant.write,
    )
    assert batch.status_code == 201, batch.text
    assert [m["role"] for m in batch.json()["messages"]] == ["system", "user", "assistant", "user"]

    context = await client.get(f"/v1/sessions/{agent_session_id}/context", headers=tenant.read)
    messages = context.json()["messages"]
    assert messages == conversation
    check_chat_request({"model": "m", "messages": messages})
    async with openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="sk-test") as model:
        answer = await model.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert answer.choices[0].message.content == "ok"
    assert fake_openai.requests[-1].body["messages"][0] == DEVELOPER
    assert fake_openai.errors == []
