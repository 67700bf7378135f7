"""Assembly on long real conversations, replayed with a commit (offline generator) every 40
messages: budgets from 1 000 to 200 000 tokens, the real ``openai`` SDK against the strict local
server, and the size of the assembled context against the whole history (DESIGN 15: at most 20 %
at the default budget of 128 000 tokens).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from app.db import Database
from app.replay.datasets import locomo, tau_airline_shift
from app.replay.formats import Conversation
from tests.conftest import TenantKeys, make_tenant
from tests.context.helpers import (
    SUMMARY_PREFIX,
    assert_well_formed,
    get_context,
    replay,
    stored_messages,
)
from tests.support.api import create_session
from tests.support.datasets import DATASETS, loaded
from tests.support.fake_openai import FakeOpenAI

BUDGETS = (1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 200_000)
TAU_RUNS = 12
LOCOMO_NAMES = [
    f"locomo-{path.stem}" for path in sorted(DATASETS.glob("locomo/locomo10_v2/*.json"))
]


def conversations() -> list[Conversation]:
    return [*loaded(locomo), loaded(tau_airline_shift, None, TAU_RUNS)]


@pytest.fixture(scope="module")
async def replayed(
    client: httpx.AsyncClient, database: Database
) -> tuple[TenantKeys, dict[str, str]]:
    """Every conversation replayed once for this module: name → agent session id."""
    keys = await make_tenant(database, "datasets")
    sessions: dict[str, str] = {}
    for conversation in conversations():
        sid = await create_session(client, keys, external_id=conversation.name)
        archives = await replay(client, keys, sid, conversation.messages)
        assert archives >= 5, f"{conversation.name} is too short to say anything about assembly"
        sessions[conversation.name] = sid
    return keys, sessions


def as_sent(message: Mapping[str, Any]) -> dict[str, Any]:
    """A stored dataset message as the chat API accepts it: tool results carry no ``name``."""
    return {k: v for k, v in message.items() if not (message["role"] == "tool" and k == "name")}


TAU_NAME = f"tau-airline-1-{TAU_RUNS}"
SWEPT = ("locomo-43", TAU_NAME)


@pytest.mark.parametrize("name", SWEPT)
async def test_budgets_from_1000_to_200000(
    client: httpx.AsyncClient, replayed: tuple[TenantKeys, dict[str, str]], name: str
) -> None:
    keys, sessions = replayed
    sid = sessions[name]
    omitted_somewhere = cut_somewhere = False
    for budget in BUDGETS:
        context = await get_context(client, keys, sid, token_budget=budget)
        assert_well_formed(context)
        tokens, stats = context["tokens"], context["stats"]
        covered = context["working_memory"]["covered_end_seq"]
        unsummarised = await stored_messages(client, keys, sid, after_seq=covered)
        assert stats["messages_unsummarised"] == len(unsummarised)

        newest_user = max(m["seq"] for m in unsummarised if m["role"] == "user")
        assert stats["newest_user_seq"] == newest_user
        by_seq = {m["seq"]: m for m in unsummarised}
        assert as_sent(by_seq[newest_user]["message"]) in context["messages"]
        if tokens["over_budget"]:
            assert by_seq[newest_user]["token_count"] > tokens["usable"]
        else:
            assert tokens["total"] <= tokens["usable"] == budget - tokens["reserved"]

        # The raw part is exactly the unsummarised messages minus what stats say was left out.
        left_out = {
            seq for r in stats["omitted_ranges"] for seq in range(r["start_seq"], r["end_seq"] + 1)
        }
        left_out |= {item["seq"] for item in stats["dropped"]}
        expected = [as_sent(m["message"]) for m in unsummarised if m["seq"] not in left_out]
        opening = context["messages"][0].get("content") or ""
        has_summary = isinstance(opening, str) and opening.startswith(SUMMARY_PREFIX)
        assert context["messages"][has_summary:] == expected
        omitted_somewhere |= stats["messages_omitted"] > 0
        cut_somewhere |= bool(stats["wm_cuts"]) or stats["summary_omitted"]
        if budget == BUDGETS[-1]:
            assert stats["messages_omitted"] == 0
            assert stats["wm_cuts"] == []
            assert has_summary
    assert omitted_somewhere, "no budget was small enough to leave anything out"
    assert cut_somewhere, "no budget was small enough to reduce the summary"


@pytest.mark.parametrize("name", SWEPT)
async def test_the_openai_sdk_sends_the_context_as_is(
    client: httpx.AsyncClient,
    replayed: tuple[TenantKeys, dict[str, str]],
    fake_openai: FakeOpenAI,
    name: str,
) -> None:
    keys, sessions = replayed
    model = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="x", max_retries=0)
    async with model:
        for budget in (1_000, 8_000, 128_000):
            context = await get_context(client, keys, sessions[name], token_budget=budget)
            messages = [
                {
                    "role": "system",
                    "content": "You are an agent.\n\n" + context["system_prompt_addition"],
                },
                *context["messages"],
            ]
            completion = await model.chat.completions.create(
                model="m", messages=cast("list[ChatCompletionMessageParam]", messages)
            )
            assert completion.choices[0].message.content == "ok"
            request = fake_openai.requests[-1]
            assert request.status == 200
            assert request.body["messages"] == messages
    assert all(request.status == 200 for request in fake_openai.requests)


@pytest.mark.parametrize("name", [*LOCOMO_NAMES, TAU_NAME])
async def test_the_context_is_at_most_a_fifth_of_the_history(
    client: httpx.AsyncClient, replayed: tuple[TenantKeys, dict[str, str]], name: str
) -> None:
    keys, sessions = replayed
    context = await get_context(client, keys, sessions[name])
    assert_well_formed(context)
    tokens = context["tokens"]
    assert tokens["budget"] == 128_000
    assert context["stats"]["messages_omitted"] == 0, "the default budget leaves nothing out"
    assert tokens["total"] <= 0.20 * tokens["history_total"], (
        f"{name}: {tokens['total']} of {tokens['history_total']} tokens"
    )
