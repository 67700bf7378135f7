"""Requests of the ``/v1`` API that many tests make: an agent session, messages, a commit."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.tenants import TenantKeys


async def create_session(client: httpx.AsyncClient, keys: TenantKeys, **body: Any) -> str:
    response = await client.post("/v1/sessions", json=body, headers=keys.write)
    assert response.status_code == 201, response.text
    agent_session_id: str = response.json()["id"]
    return agent_session_id


def user(text_: str) -> dict[str, Any]:
    return {"role": "user", "content": text_}


def assistant(text_: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text_}


def calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            for i in ids
        ],
    }


def result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": f"result of {call_id}"}


async def append(
    client: httpx.AsyncClient,
    keys: TenantKeys,
    agent_session_id: str,
    messages: list[dict[str, Any]],
) -> None:
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:batch",
        json={"messages": messages},
        headers=keys.write,
    )
    assert response.status_code == 201, response.text


async def commit(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str, **body: Any
) -> httpx.Response:
    return await client.post(
        f"/v1/sessions/{agent_session_id}/commit", json=body, headers=keys.write
    )
