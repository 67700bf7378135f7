"""Helpers for context tests: fetch a context, replay a conversation, and walk an assembled list.

The walk is independent of the assembly code: it checks the list the way a strict server and a
careful reader would (no leading tool message, every call answered right after it, the token
arithmetic adds up), so a test using it fails if assembly breaks any of those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from tests.conftest import TenantKeys
from tests.support.api import append, commit
from tests.support.fake_openai import check_chat_request

SUMMARY_PREFIX = "[Session History Summary]\n\n# Working Memory\n"


async def get_context(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str, **params: Any
) -> dict[str, Any]:
    response = await client.get(
        f"/v1/sessions/{agent_session_id}/context", params=params, headers=keys.read
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def stored_messages(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str, after_seq: int = 0
) -> list[dict[str, Any]]:
    """Every stored message after ``after_seq``, as ``MessageRead`` dicts, oldest first."""
    found: list[dict[str, Any]] = []
    cursor: int | None = after_seq
    while cursor is not None:
        response = await client.get(
            f"/v1/sessions/{agent_session_id}/messages",
            params={"after_seq": cursor, "limit": 1000},
            headers=keys.read,
        )
        assert response.status_code == 200, response.text
        found += response.json()["items"]
        cursor = response.json()["next_after_seq"]
    return found


async def replay(
    client: httpx.AsyncClient,
    keys: TenantKeys,
    agent_session_id: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    every: int = 40,
) -> int:
    """Append ``messages`` ``every`` at a time, committing (and waiting) after each full batch;
    returns how many commits made an archive."""
    archives = 0
    for start in range(0, len(messages), every):
        batch = [dict(message) for message in messages[start : start + every]]
        await append(client, keys, agent_session_id, batch)
        if len(batch) < every:
            break
        response = await commit(client, keys, agent_session_id, wait=True)
        assert response.status_code == 200, response.text
        if response.json()["status"] != "skipped":
            assert response.json()["status"] == "done", response.text
            archives += 1
    return archives


def assert_tool_groups_whole(messages: Sequence[Mapping[str, Any]]) -> None:
    """Every tool call is answered by the messages right after it, and every result has a call."""
    assert not messages or messages[0]["role"] != "tool", "the list starts with a tool result"
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message["role"] != "tool", f"message {index} answers no call before it"
        index += 1
        calls = message.get("tool_calls") or []
        owed = [call["id"] for call in calls]
        while owed:
            assert index < len(messages), f"calls {owed} have no results"
            answer = messages[index]
            assert answer["role"] == "tool", f"calls {owed} are not answered right after them"
            assert answer["tool_call_id"] in owed, f"result {index} answers another call"
            owed.remove(answer["tool_call_id"])
            index += 1


def assert_well_formed(context: Mapping[str, Any]) -> None:
    """The list is accepted by a strict server, and the token figures add up."""
    messages = context["messages"]
    system = {"role": "system", "content": "You are helpful. " + context["system_prompt_addition"]}
    check_chat_request({"model": "m", "messages": [system, *messages]})
    assert_tool_groups_whole(messages)
    tokens = context["tokens"]
    assert tokens["total"] == (
        tokens["system_prompt_addition"]
        + tokens["wm"]
        + tokens["memories"]
        + tokens["pinned"]
        + tokens["messages"]
    )
    assert tokens["usable"] == tokens["budget"] - tokens["reserved"]
    assert tokens["over_budget"] is (tokens["total"] > tokens["usable"])
    has_summary = bool(messages) and str(messages[0].get("content", "")).startswith(SUMMARY_PREFIX)
    assert has_summary is (tokens["wm"] > 0)
    stats = context["stats"]
    omitted = sum(r["end_seq"] - r["start_seq"] + 1 for r in stats["omitted_ranges"])
    assert stats["messages_omitted"] == omitted
    # The [Relevant Memories] and [Pinned] blocks follow the summary, in that order.
    heads = has_summary + (tokens["memories"] > 0) + (tokens["pinned"] > 0)
    blocks = [str(m.get("content", "")).split("\n")[0] for m in messages[has_summary:heads]]
    assert blocks == [
        *(["[Relevant Memories]"] if tokens["memories"] else []),
        *(["[Pinned]"] if tokens["pinned"] else []),
    ]
    assert stats["messages_included"] + stats["messages_filled"] == len(messages) - heads
    assert tokens["filled"] <= tokens["messages"]
    if stats["messages_filled"]:
        assert has_summary, "filled messages follow a summary"
        covered = stats["filled_range"]["end_seq"]
        assert context["working_memory"]["covered_end_seq"] == covered
    else:
        assert stats["filled_range"] is None
        assert tokens["filled"] == 0
    assert (
        stats["messages_included"] + stats["messages_omitted"] + len(stats["dropped"])
        == stats["messages_unsummarised"]
    )
