"""Helpers for long-term memory tests: state facts in an agent session, commit, search, read."""

from __future__ import annotations

from typing import Any

import httpx

from app.db import Database
from tests.conftest import TenantKeys
from tests.support.api import append, commit, create_session


async def state(
    client: httpx.AsyncClient,
    keys: TenantKeys,
    agent_session_id: str,
    *texts: str,
) -> dict[str, Any]:
    """Append the texts as user messages (each answered by the agent), commit them all and wait;
    returns the finished archive."""
    messages: list[dict[str, Any]] = []
    for text in texts:
        messages += [
            {"role": "user", "content": text},
            {"role": "assistant", "content": "Noted."},
        ]
    await append(client, keys, agent_session_id, messages)
    response = await commit(client, keys, agent_session_id, keep_recent_count=0, wait=True)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "done", response.text
    archive: dict[str, Any] = response.json()["archive"]
    return archive


async def new_session(client: httpx.AsyncClient, keys: TenantKeys, user_id: str | None) -> str:
    body = {} if user_id is None else {"user_id": user_id}
    return await create_session(client, keys, **body)


async def search(
    client: httpx.AsyncClient, key: str, q: str, **params: Any
) -> list[dict[str, Any]]:
    response = await client.get(
        "/v1/memories/search", params={"q": q, **params}, headers=TenantKeys.headers(key)
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def memories(client: httpx.AsyncClient, key: str, **params: Any) -> list[dict[str, Any]]:
    response = await client.get("/v1/memories", params=params, headers=TenantKeys.headers(key))
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def events(client: httpx.AsyncClient, key: str, memory_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/memories/{memory_id}/events", headers=TenantKeys.headers(key))
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def user_key(database: Database, keys: TenantKeys, user_id: str) -> str:
    """A reader key of the tenant bound to ``user_id``."""
    from app.tenancy import service as tenancy
    from app.tenancy.principal import Role

    async with database.unscoped() as db:
        _, plaintext = await tenancy.issue_key(
            db, keys.tenant_id, role=Role.WRITER, user_id=user_id
        )
    return plaintext


async def rows(database: Database, sql: str, **params: Any) -> list[dict[str, Any]]:
    """Rows read as the schema owner (row-level security forced on memory tables applies, so
    the tenant token of ``tenant_id`` is set when given)."""
    from sqlalchemy import text

    from app.db import as_tenant

    async with database.unscoped() as db:
        if "tenant_id" in params:
            await as_tenant(db, params["tenant_id"])
        result = await db.execute(text(sql), params)
        return [dict(row._mapping) for row in result]
