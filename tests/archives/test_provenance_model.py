"""Provenance and pins end to end with a scripted model: the real ``openai`` SDK against the
strict local server, each reply's effect read back from the stored section versions and the
assembled context (DESIGN 18).

A model that invents a constraint is caught (``[tool-sourced]``, ``tool_sourced_instruction``, not
protected by guard C); a model that drops a pinned fact cannot remove it from the context; the
prompts number the messages and show the pins as facts not to contradict.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text

from app.archives.generation import WorkingMemoryGenerator
from app.db import Database
from app.llm.openai_provider import OpenAIChatModel
from tests.conftest import AppFactory, make_tenant
from tests.context.helpers import assert_well_formed, get_context
from tests.support.api import create_session
from tests.support.archives import FIRST, Scenario, update_args
from tests.support.fake_openai import FakeOpenAI, ToolCallReply

INVENTED = "Always refund in cash, never by card"


async def section_rows(scenario: Scenario, archive_seq: int) -> dict[str, dict[str, Any]]:
    async with scenario.database.tenant(scenario.keys.tenant_id) as db:
        rows = await db.execute(
            text(
                "SELECT section::text AS section, content, reason, details, sources "
                "FROM wm_section_versions WHERE agent_session_id = :sid AND archive_seq = :seq"
            ),
            {"sid": scenario.agent_session_id, "seq": archive_seq},
        )
        return {row.section: dict(row._mapping) for row in rows}


@pytest.fixture
async def scenario(own_database: Database, app_client: AppFactory) -> AsyncIterator[Scenario]:
    keys = await make_tenant(own_database)
    with FakeOpenAI() as model:
        chat = OpenAIChatModel(
            base_url=model.base_url, api_key="k", model="scripted", timeout_s=5, max_retries=0
        )
        generator = WorkingMemoryGenerator(chat, fallback="offline")
        async with app_client(own_database, generator=generator) as http:
            sid = await create_session(http, keys)
            model.push(ToolCallReply(json.dumps({"markdown": FIRST})))
            first = Scenario(http, keys, model, own_database, sid)
            # Messages 1 (user) and 2 (assistant).
            await first.commit_turn("We migrate billing to Postgres. Never deploy on Fridays.")
            yield first
        await chat.close()


async def test_a_model_that_invents_a_constraint_is_caught(scenario: Scenario) -> None:
    # Messages 3 (user) and 4 (assistant "ok"); the model cites the assistant's message.
    scenario.model.push(
        ToolCallReply(
            update_args(
                state={"op": "UPDATE", "content": "Invoices are moving (#3)"},
                task={"op": "APPEND", "items": [f"{INVENTED} (#4)", "Ship the cutover (#3)"]},
            )
        )
    )
    body = await scenario.commit_turn("Invoices are moving now.")
    prompt = scenario.model.requests[-1].body["messages"][1]["content"]
    assert "#3 [user]: Invoices are moving now." in prompt
    assert "#4 [assistant]: ok" in prompt
    rows = await section_rows(scenario, 2)
    task = rows["Task & Goals"]
    # cited to the assistant's message only: not the user's instruction
    assert task["reason"] == "tool_sourced_instruction"
    assert task["details"]["tool_sourced"] == [f"[tool-sourced] {INVENTED}"]
    assert f"- [tool-sourced] {INVENTED}" in task["content"]
    assert "- Never deploy on Fridays" in task["content"]
    assert "(#" not in task["content"], "references are stripped from the stored text"
    sources = {entry["item"]: entry["seqs"] for entry in task["sources"]}
    assert sources[f"[tool-sourced] {INVENTED}"] == [4]
    authority = {entry["item"]: entry.get("authority") for entry in task["sources"]}
    assert authority[f"[tool-sourced] {INVENTED}"] == ["assistant"]
    assert sources["Ship the cutover"] == [3]
    assert rows["Current State"]["sources"] == [
        {"item": "Invoices are moving", "seqs": [3], "authority": ["user"]}
    ]
    # The API answers carry the sources, and the context shows the marked item.
    assert body["working_memory"]["sources"]["Current State"][0]["seqs"] == [3]
    # Unprotected: a later update that drops it removes it; the user's constraint stays.
    scenario.model.push(
        ToolCallReply(update_args(task={"op": "UPDATE", "content": "- Ship the cutover (#3)"}))
    )
    await scenario.commit_turn("Carry on.")
    later = (await section_rows(scenario, 3))["Task & Goals"]
    assert INVENTED not in later["content"]
    assert "- [kept constraint] Never deploy on Fridays" in later["content"]
    assert later["reason"] == "constraint_restored"


async def test_references_outside_the_covered_range_are_dropped_and_sources_survive_a_merge(
    scenario: Scenario,
) -> None:
    scenario.model.push(
        ToolCallReply(
            update_args(
                facts={
                    "op": "APPEND",
                    "items": ["Invoices use UUIDs (#3)", "Refund limit is 500 EUR (#4, #99)"],
                }
            )
        )
    )
    await scenario.commit_turn("Invoices use UUIDs; the refund limit is 500 EUR.")
    facts = (await section_rows(scenario, 2))["Key Facts & Decisions"]
    sources = {entry["item"]: entry["seqs"] for entry in facts["sources"]}
    assert sources["Refund limit is 500 EUR"] == [4]  # 99 is beyond message 4
    # An UPDATE that merges the two keeps the union of their sources.
    scenario.model.push(
        ToolCallReply(
            update_args(
                facts={
                    "op": "UPDATE",
                    "content": "- Chose Postgres 16 because of pgvector\n"
                    "- Invoices use UUIDs; Refund limit is 500 EUR",
                }
            )
        )
    )
    await scenario.commit_turn("Merge those facts.")
    merged = (await section_rows(scenario, 3))["Key Facts & Decisions"]
    union = {entry["item"]: entry["seqs"] for entry in merged["sources"]}
    assert union["Invoices use UUIDs; Refund limit is 500 EUR"] == [3, 4]
    prompt = scenario.model.requests[-1].body["messages"][1]["content"]
    assert "- Invoices use UUIDs (#3)" in prompt, "the prior shows each item's references"


async def test_a_model_that_drops_a_pinned_fact_cannot_remove_it_from_the_context(
    scenario: Scenario,
) -> None:
    http, keys, sid = scenario.http, scenario.keys, scenario.agent_session_id
    made = await http.post(
        f"/v1/sessions/{sid}/pins",
        json={"text": "The refund limit is 500 EUR", "section": "Key Facts & Decisions"},
        headers=keys.write,
    )
    assert made.status_code == 201, made.text
    pinned_message = await http.post(
        f"/v1/sessions/{sid}/pins", json={"message_seq": 1}, headers=keys.write
    )
    assert pinned_message.status_code == 201, pinned_message.text
    # The model wipes every section it may.
    scenario.model.push(
        ToolCallReply(
            update_args(
                title={"op": "UPDATE", "content": "Gardening"},
                state={"op": "UPDATE", "content": ""},
                facts={"op": "UPDATE", "content": ""},
                task={"op": "UPDATE", "content": "- Write a newsletter"},
            )
        )
    )
    await scenario.commit_turn("Next step?")
    prompt = scenario.model.requests[-1].body["messages"][1]["content"]
    assert "<pinned_facts>\n- (Key Facts & Decisions) The refund limit is 500 EUR" in prompt
    assert "never contradict them" in prompt
    context = await get_context(http, keys, sid, token_budget=4_000)
    assert_well_formed(context)
    block = context["messages"][1]["content"]
    assert block.startswith("[Pinned]")
    assert "(Key Facts & Decisions) The refund limit is 500 EUR" in block
    assert (
        "(message 1, exact text) We migrate billing to Postgres. Never deploy on Fridays." in block
    )
    assert "500 EUR" not in context["messages"][0]["content"]
