"""A free-text overview migrated from the first revision is upgraded by the next commit."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from app import migrations
from app.archives.generation import WorkingMemoryGenerator
from app.db import Database, login_url
from app.llm.openai_provider import OpenAIChatModel
from app.tenancy import service as tenancy
from app.tenancy.principal import Role
from tests.conftest import AppFactory
from tests.support.archives import FIRST
from tests.support.fake_openai import FakeOpenAI, ToolCallReply
from tests.support.postgres import PostgresForTests

LEGACY = "The user is Dana. She prefers tea over coffee and works on the Atlas project."


@pytest.fixture
async def legacy_database(postgres: PostgresForTests) -> AsyncIterator[tuple[Database, str]]:
    """A database written at the first revision (one free-text archive), then upgraded."""
    url = postgres.create_database("wmlegacy")
    migrations.upgrade(url, "0001")
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        tenant_id = connection.execute(
            "INSERT INTO tenants (name) VALUES ('legacy') RETURNING tenant_id"
        ).fetchone()[0]  # type: ignore[index]
        session_id = connection.execute(
            "INSERT INTO agent_sessions (tenant_id, last_seq, archived_upto_seq, archive_count,"
            " turn_count) VALUES (%s, 2, 2, 1, 1) RETURNING agent_session_id",
            (tenant_id,),
        ).fetchone()[0]  # type: ignore[index]
        for seq, role, content in [(1, "user", "hi, I'm Dana"), (2, "assistant", "hello Dana")]:
            connection.execute(
                "INSERT INTO messages (tenant_id, agent_session_id, seq, role, turn, message,"
                " token_count, content_text) VALUES (%s, %s, %s, %s, 1, %s, 4, %s)",
                (
                    tenant_id,
                    session_id,
                    seq,
                    role,
                    json.dumps({"role": role, "content": content}),
                    content,
                ),
            )
        connection.execute(
            "INSERT INTO archives (tenant_id, agent_session_id, archive_seq, start_seq, end_seq,"
            " overview) VALUES (%s, %s, 1, 1, 2, %s)",
            (tenant_id, session_id, LEGACY),
        )
    migrations.upgrade(url)
    database = Database.from_url(login_url(url))
    yield database, str(session_id)
    await database.dispose()


async def issue_writer(database: Database) -> dict[str, str]:
    async with database.unscoped() as db:
        [tenant_id] = await tenancy.tenant_ids(db)
        _, key = await tenancy.issue_key(db, tenant_id, role=Role.WRITER)
    return {"Authorization": f"Bearer {key}"}


async def test_the_creation_call_upgrades_a_legacy_overview(
    legacy_database: tuple[Database, str], app_client: AppFactory
) -> None:
    database, agent_session_id = legacy_database
    headers = await issue_writer(database)
    with FakeOpenAI() as model:
        chat = OpenAIChatModel(
            base_url=model.base_url, api_key="k", model="m", timeout_s=2, max_retries=0
        )
        model.push(ToolCallReply(json.dumps({"markdown": FIRST})))
        async with app_client(database, generator=WorkingMemoryGenerator(chat)) as http:
            legacy_wm = await http.get(
                f"/v1/sessions/{agent_session_id}/working-memory", headers=headers
            )
            assert legacy_wm.json()["is_legacy"] is True
            assert legacy_wm.json()["markdown"] == LEGACY
            body = await commit_with(http, headers, agent_session_id)
        await chat.close()
    archive = body["archive"]
    assert archive["archive_seq"] == 2
    assert archive["upgraded_from_legacy"] is True
    assert archive["generator"] == "llm_create"
    request = model.requests[-1].body
    assert request["tool_choice"]["function"]["name"] == "create_working_memory"
    assert LEGACY in request["messages"][-1]["content"]
    assert body["working_memory"]["sections"]["Session Title"] == "Billing service migration"


async def test_offline_upgrade_keeps_every_legacy_line(
    legacy_database: tuple[Database, str], app_client: AppFactory
) -> None:
    database, agent_session_id = legacy_database
    headers = await issue_writer(database)
    async with app_client(database) as http:
        body = await commit_with(http, headers, agent_session_id)
    assert body["archive"]["upgraded_from_legacy"] is True
    assert body["archive"]["generator"] == "offline"
    assert LEGACY in body["working_memory"]["sections"]["Key Facts & Decisions"]


async def commit_with(
    http: httpx.AsyncClient, headers: dict[str, str], agent_session_id: str
) -> dict[str, Any]:
    response = await http.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "Let's plan the Atlas launch for 2026-12-01."},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    committed = await http.post(
        f"/v1/sessions/{agent_session_id}/commit",
        json={"keep_recent_count": 0, "wait": True},
        headers=headers,
    )
    assert committed.status_code == 200, committed.text
    result: dict[str, Any] = committed.json()
    return result
