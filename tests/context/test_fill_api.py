"""``fill`` through the API: the context, compact and the OpenViking-compatible context.

Between two commits the summary message and ``system_prompt_addition`` are byte-identical from
call to call while new messages arrive, and the filled part only ever loses its oldest units.
"""

from __future__ import annotations

from typing import Any

import httpx

from app.context.brief import BRIEF_OPEN
from tests.compat.helpers import API, ok
from tests.conftest import TenantKeys
from tests.context.helpers import SUMMARY_PREFIX, assert_well_formed, get_context, stored_messages
from tests.support.api import append, assistant, calls, commit, create_session, result, user


def turns(count: int, start: int = 0) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(start, start + count):
        messages.append(user(f"Question {n}: what is the fare of flight HAT{n:03d} today?"))
        messages.append(assistant(f"Flight HAT{n:03d} costs {100 + n} dollars one way."))
    return messages


async def committed(client: httpx.AsyncClient, keys: TenantKeys, external_id: str) -> str:
    """An agent session of 60 messages, with a tool group, committed keeping 6."""
    sid = await create_session(client, keys, external_id=external_id)
    await append(client, keys, sid, [*turns(20), calls("c1"), result("c1"), *turns(9, 20)])
    response = await commit(client, keys, sid, keep_recent_count=6, wait=True)
    assert response.json()["status"] == "done", response.text
    return sid


def raw_seqs(context: dict[str, Any], stored: list[dict[str, Any]]) -> list[int]:
    """The seqs of the raw messages sent, matched against the stored messages in order."""
    seqs: list[int] = []
    pool = iter(stored)
    for sent in context["messages"][1:]:
        for row in pool:
            if {k: v for k, v in row["message"].items() if k in sent} == sent:
                seqs.append(row["seq"])
                break
    return seqs


async def test_fill_sends_the_newest_covered_messages_after_the_summary(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await committed(client, tenant, "fill-basic")
    plain = await get_context(client, tenant, sid, token_budget=800, reserve_tokens=0)
    filled = await get_context(client, tenant, sid, token_budget=800, reserve_tokens=0, fill=True)
    for context in (plain, filled):
        assert_well_formed(context)
        assert context["messages"][0]["content"].startswith(SUMMARY_PREFIX)
    covered = filled["working_memory"]["covered_end_seq"]
    assert plain["stats"]["messages_filled"] == 0
    assert plain["tokens"]["filled"] == 0
    stats, tokens = filled["stats"], filled["tokens"]
    assert stats["messages_filled"] > 0
    assert stats["filled_range"]["end_seq"] == covered
    assert stats["messages_included"] == plain["stats"]["messages_included"]
    assert tokens["total"] <= tokens["usable"] == 800
    assert tokens["filled"] > 0
    assert tokens["messages"] == plain["tokens"]["messages"] + tokens["filled"]
    stored = await stored_messages(client, tenant, sid)
    seqs = raw_seqs(filled, stored)
    start = stats["filled_range"]["start_seq"]
    assert start > 1
    # The room left would not hold the next older covered unit (a tool group whole).
    older = stored[start - 2]["token_count"]
    if stored[start - 2]["role"] == "tool":
        older += stored[start - 3]["token_count"]
    assert tokens["usable"] - tokens["total"] < older
    assert seqs == list(range(start, covered + 1)) + raw_seqs(plain, stored)
    assert filled["messages"][1 : 1 + stats["messages_filled"]] == [
        row["message"] for row in stored[start - 1 : covered]
    ]
    assert "up to message" in filled["system_prompt_addition"]
    assert "up to message" not in plain["system_prompt_addition"]
    assert filled["messages"][0] == plain["messages"][0]
    # A budget that holds everything sends every message once, in order.
    everything = await get_context(client, tenant, sid, token_budget=100_000, fill=True)
    assert raw_seqs(everything, stored) == list(range(1, len(stored) + 1))


async def test_between_commits_the_prefix_is_byte_identical(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await committed(client, tenant, "fill-cache")
    stored = await stored_messages(client, tenant, sid)
    previous: dict[str, Any] | None = None
    previous_filled: list[int] = []
    first_filled = 0
    for n in range(6):
        context = await get_context(
            client, tenant, sid, token_budget=800, reserve_tokens=0, fill=True
        )
        assert_well_formed(context)
        stats = context["stats"]
        filled = raw_seqs(context, stored)[: stats["messages_filled"]]
        if previous is not None:
            assert context["messages"][0] == previous["messages"][0]
            assert context["system_prompt_addition"] == previous["system_prompt_addition"]
            # The filled part only loses its oldest units as new messages take the room.
            assert filled == previous_filled[len(previous_filled) - len(filled) :]
            assert len(filled) <= len(previous_filled)
        previous, previous_filled = context, filled
        first_filled = first_filled or len(filled)
        await append(client, tenant, sid, turns(1, 100 + n))
        stored = await stored_messages(client, tenant, sid)
    assert previous is not None
    assert 0 < len(previous_filled) < first_filled, "new messages took the room of old ones"
    again = await get_context(client, tenant, sid, token_budget=800, reserve_tokens=0, fill=True)
    same = await get_context(client, tenant, sid, token_budget=800, reserve_tokens=0, fill=True)
    assert again["messages"] == same["messages"], "a repeated call is identical"
    response = await commit(client, tenant, sid, keep_recent_count=2, wait=True)
    assert response.json()["status"] == "done"
    after = await get_context(client, tenant, sid, token_budget=800, reserve_tokens=0, fill=True)
    assert after["system_prompt_addition"] != again["system_prompt_addition"], "a commit moves it"


async def test_compact_and_the_openviking_context_take_fill(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    sid = await committed(client, tenant, "fill-compat")
    viking = "fill-compat"
    plain = ok(await client.get(f"{API}/sessions/{viking}/context?token_budget=1500",
                                headers=tenant.read))  # fmt: skip
    filled = ok(await client.get(f"{API}/sessions/{viking}/context?token_budget=1500&fill=true",
                                 headers=tenant.read))  # fmt: skip
    assert len(filled["messages"]) > len(plain["messages"])
    assert filled["latest_archive_overview"] == plain["latest_archive_overview"]
    assert filled["estimatedTokens"] <= 1_500
    assert filled["stats"]["activeTokens"] > plain["stats"]["activeTokens"]
    assert filled["messages"][-len(plain["messages"]) :] == plain["messages"]

    await append(client, tenant, sid, turns(3, 200))
    response = await client.post(
        f"/v1/sessions/{sid}/compact",
        params={"token_budget": 1_500, "reserve_tokens": 0, "fill": True},
        headers=tenant.write,
    )
    assert response.status_code == 200, response.text
    compacted = response.json()
    assert compacted["commit"]["status"] == "done"
    assert_well_formed(compacted)
    assert compacted["stats"]["messages_filled"] > 0
    assert (
        compacted["stats"]["filled_range"]["end_seq"]
        == (compacted["working_memory"]["covered_end_seq"])
    )


async def test_fill_must_be_a_boolean(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    sid = await committed(client, tenant, "fill-invalid")
    response = await client.get(
        f"/v1/sessions/{sid}/context", params={"fill": "sometimes"}, headers=tenant.read
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["query", "fill"]


async def test_a_reduced_summary_lists_what_it_displaced_in_brief(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    """At a budget the summary does not fit whole, its brief opens with the flight numbers of the
    newest covered messages it displaced (those truncation would send and the context does not
    send raw), newest first."""
    sid = await committed(client, tenant, "fill-brief")
    stored = await stored_messages(client, tenant, sid)
    budget = 450
    filled = await get_context(
        client, tenant, sid, token_budget=budget, reserve_tokens=0, fill=True
    )
    assert_well_formed(filled)
    stats, tokens = filled["stats"], filled["tokens"]
    assert stats["wm_cuts"], "the summary is reduced at this budget"
    assert tokens["total"] <= budget
    covered = filled["working_memory"]["covered_end_seq"]
    start = stats["filled_range"]["start_seq"] if stats["messages_filled"] else covered + 1
    newest = [row for row in stored if row["seq"] < start][-2:]
    flights = [
        word.strip(".,?")
        for row in reversed(newest)
        for word in str(row["message"].get("content") or "").split()
        if word.startswith("HAT")
    ]
    assert flights
    brief = filled["messages"][0]["content"].rstrip().splitlines()[-1]
    assert brief.startswith(BRIEF_OPEN)
    assert all(flight in brief for flight in flights)
    # Newest displaced message first.
    assert brief.index(flights[0]) < brief.index(flights[-1]) or len(set(flights)) == 1
    for sent in filled["messages"][1:]:
        assert BRIEF_OPEN not in str(sent.get("content"))
