"""The openai provider end to end: the real SDK against the local server, every reply's effect
on the stored archive and section rows (DESIGN 4.1–4.3)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from app.archives.generation import WorkingMemoryGenerator
from app.db import Database
from app.llm.openai_provider import OpenAIChatModel
from tests.conftest import AppFactory, make_tenant
from tests.support.api import create_session
from tests.support.archives import FIRST, Scenario, update_args
from tests.support.fake_openai import (
    DelayedReply,
    ErrorReply,
    FakeOpenAI,
    TextReply,
    ToolCallReply,
)


@pytest.fixture
async def scenario(own_database: Database, app_client: AppFactory) -> AsyncIterator[Scenario]:
    keys = await make_tenant(own_database)
    with FakeOpenAI() as model:
        chat = OpenAIChatModel(
            base_url=model.base_url,
            api_key="test-key",
            model="test-model",
            timeout_s=1.5,
            max_retries=1,
            backoff_base_s=0.01,
            backoff_max_s=0.02,
        )
        generator = WorkingMemoryGenerator(chat, fallback="offline")
        async with app_client(own_database, generator=generator) as http:
            agent_session_id = await create_session(http, keys)
            model.push(ToolCallReply(json.dumps({"markdown": FIRST})))
            first = Scenario(http, keys, model, own_database, agent_session_id)
            body = await first.commit_turn(
                "We migrate billing to Postgres. Never deploy on Fridays."
            )
            assert body["archive"]["generator"] == "llm_create"
            assert model.requests[-1].body["tool_choice"]["function"]["name"] == (
                "create_working_memory"
            )
            yield first
        await chat.close()


async def test_good_tool_call_is_merged_under_the_guards(scenario: Scenario) -> None:
    scenario.model.push(
        ToolCallReply(
            update_args(
                state={"op": "UPDATE", "content": "Invoices moved; testing now."},
                files={"op": "UPDATE", "content": "- services/billing/app.py"},
                errors={"op": "UPDATE", "content": "- all good now"},
                title={"op": "UPDATE", "content": "Cooking recipes"},
            )
        )
    )
    body = await scenario.commit_turn("Invoices are moved.")
    archive = body["archive"]
    assert archive["generator"] == "llm_update"
    assert archive["model"] == "test-model"
    assert archive["usage"]["calls"] == 1
    request = scenario.model.requests[-1].body
    assert request["tool_choice"]["function"]["name"] == "update_working_memory"
    rows = await scenario.sections(2)
    assert rows["Current State"]["reason"] == "accepted"
    assert rows["Current State"]["content"] == "Invoices moved; testing now."
    assert rows["Files & Context"]["reason"] == "files_path_regression"
    assert "services/billing/models.py" in rows["Files & Context"]["content"]
    assert rows["Errors & Corrections"]["reason"] == "errors_append_only"
    assert "ImportError" in rows["Errors & Corrections"]["content"]
    assert rows["Session Title"]["reason"] == "title_no_overlap"
    assert rows["Session Title"]["content"] == "Billing service migration"
    assert {row["generator"] for row in rows.values()} == {"llm_update"}
    assert {row["prompt_version"] for row in rows.values()} == {archive["prompt_version"]}


async def test_no_tool_call_falls_back_to_creation(scenario: Scenario) -> None:
    recreated = FIRST.replace("Moving invoices to Postgres.", "Recreated state.")
    scenario.model.push(
        TextReply("I think things are fine."), ToolCallReply(json.dumps({"markdown": recreated}))
    )
    body = await scenario.commit_turn("Status?")
    assert body["archive"]["generator"] == "llm_create_fallback"
    assert body["archive"]["usage"]["calls"] == 2
    assert "no tool call" in body["archive"]["generator_note"]
    assert body["working_memory"]["sections"]["Current State"] == "Recreated state."
    assert "services/billing/models.py" in body["working_memory"]["sections"]["Files & Context"]


async def test_malformed_arguments_are_recovered(scenario: Scenario) -> None:
    good = update_args(state={"op": "UPDATE", "content": "Recovered state."})
    truncated = good[: good.index('"Task & Goals"') + 5]
    scenario.model.push(ToolCallReply(truncated))
    body = await scenario.commit_turn("Go on.")
    assert body["archive"]["generator"] == "llm_recovered"
    assert body["working_memory"]["sections"]["Current State"] == "Recovered state."
    rows = await scenario.sections(2)
    assert rows["Task & Goals"]["reason"] == "missing_op"
    assert rows["Task & Goals"]["content"] == "- Never deploy on Fridays"


async def test_unrecoverable_arguments_fall_back_to_creation(scenario: Scenario) -> None:
    scenario.model.push(
        ToolCallReply("this is not json at all"), ToolCallReply(json.dumps({"markdown": FIRST}))
    )
    body = await scenario.commit_turn("Go on.")
    assert body["archive"]["generator"] == "llm_create_fallback"
    assert "unrecoverable" in body["archive"]["generator_note"]


async def test_rate_limit_then_success(scenario: Scenario) -> None:
    before = len(scenario.model.requests)
    scenario.model.push(
        ErrorReply(429, "slow down", retry_after_s=0.01),
        ToolCallReply(update_args(state={"op": "UPDATE", "content": "After a 429."})),
    )
    body = await scenario.commit_turn("Continue.")
    assert len(scenario.model.requests) - before == 2
    assert body["archive"]["generator"] == "llm_update"
    assert body["working_memory"]["sections"]["Current State"] == "After a 429."


@pytest.mark.parametrize(
    ("reply", "note"),
    [
        (DelayedReply(6.0), "model unavailable"),
        (ErrorReply(400, "bad request"), "model unavailable"),
        (ErrorReply(500, "boom"), "model unavailable"),
    ],
    ids=["timeout", "400", "500"],
)
async def test_unavailable_model_falls_back_to_offline(
    scenario: Scenario, reply: DelayedReply | ErrorReply, note: str
) -> None:
    scenario.model.script(reply, reply, reply)
    body = await scenario.commit_turn("Please edit services/billing/tax.py next.")
    archive = body["archive"]
    assert archive["generator"] == "offline_fallback"
    assert note in archive["generator_note"]
    assert archive["status"] == "done"
    sections = body["working_memory"]["sections"]
    assert "services/billing/models.py" in sections["Files & Context"]
    assert "services/billing/tax.py" in sections["Files & Context"]
    for row in (await scenario.sections(2)).values():
        assert "boom" not in row["content"]
        assert "bad request" not in row["content"]
