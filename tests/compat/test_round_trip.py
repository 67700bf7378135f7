"""The two APIs over one store: what /api/v1 appends, /v1 reads (and sends to a model); the
working memory a /v1 commit produces is what /api/v1's context and archive give back."""

from __future__ import annotations

from typing import Any

import httpx

from tests.compat.helpers import API, append, failed, ok, user, validation_locs
from tests.conftest import TenantKeys

TOOL_PART = {
    "type": "tool",
    "tool_id": "call_HGn16KZh9oNCruxsMJ4gYXan",
    "tool_name": "search_direct_flight",
    "tool_input": {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"},
    "tool_output": '[{"flight_number": "HAT069"}]',
    "tool_status": "completed",
}


async def agent_session_id(http: httpx.AsyncClient, tenant: TenantKeys, session_id: str) -> str:
    listed = await http.get("/v1/sessions", params={"external_id": session_id}, headers=tenant.read)
    [item] = listed.json()["items"]
    found: str = item["id"]
    return found


async def test_messages_appended_through_api_v1_are_openai_messages_in_v1(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await append(
        client,
        tenant.write,
        "from-ov",
        user("Book me a flight from New York to Seattle on May 20th."),
        {"role": "assistant", "parts": [{"type": "text", "text": "Searching."}, TOOL_PART]},
    )
    v1_id = await agent_session_id(client, tenant, "from-ov")
    read = await client.get(f"/v1/sessions/{v1_id}/messages", headers=tenant.read)
    assert [item["message"] for item in read.json()["items"]] == [
        {"role": "user", "content": "Book me a flight from New York to Seattle on May 20th."},
        {
            "role": "assistant",
            "content": "Searching.",
            "tool_calls": [
                {
                    "id": "call_HGn16KZh9oNCruxsMJ4gYXan",
                    "type": "function",
                    "function": {
                        "name": "search_direct_flight",
                        "arguments": '{"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_HGn16KZh9oNCruxsMJ4gYXan",
            "content": '[{"flight_number": "HAT069"}]',
        },
    ]
    # /v1's context sends them to a model as they are, a valid tool group.
    context = await client.get(f"/v1/sessions/{v1_id}/context", headers=tenant.read)
    assert [m["role"] for m in context.json()["messages"]] == ["user", "assistant", "tool"]
    assert context.json()["stats"]["dropped"] == []


async def test_a_v1_commits_working_memory_is_the_api_v1_overview(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    created = await client.post("/v1/sessions", json={"external_id": "mixed"}, headers=tenant.write)
    v1_id = created.json()["id"]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Fix the crash in app/models/user.py. Never touch prod."},
        {
            "role": "assistant",
            "content": "Traceback ends in KeyError: email. I will add a default.",
        },
        {"role": "user", "content": "Good. Is a migration needed?"},
    ]
    batch = await client.post(
        f"/v1/sessions/{v1_id}/messages:batch", json={"messages": messages}, headers=tenant.write
    )
    assert batch.status_code == 201
    done = await client.post(
        f"/v1/sessions/{v1_id}/commit",
        json={"keep_recent_count": 1, "wait": True},
        headers=tenant.write,
    )
    assert done.json()["status"] == "done"
    markdown = (
        await client.get(f"/v1/sessions/{v1_id}/working-memory", headers=tenant.read)
    ).json()["markdown"]
    assert "app/models/user.py" in markdown

    context = ok(await client.get(f"{API}/sessions/mixed/context", headers=tenant.read))
    assert context["latest_archive_overview"] == markdown
    assert context["latest_archive_id"] == "archive_001"
    assert context["working_memory"] == {"markdown": markdown}
    assert [(m["role"], m["parts"]) for m in context["messages"]] == [
        ("user", [{"type": "text", "text": "Good. Is a migration needed?"}])
    ]
    assert context["messages"][0]["id"] == "msg_" + "0" * 31 + "3"
    assert context["pre_archive_abstracts"] == []
    stats = context["stats"]
    assert (stats["totalArchives"], stats["includedArchives"], stats["failedArchives"]) == (1, 1, 0)
    assert stats["droppedArchives"] == 0
    assert stats["activeTokens"] + stats["archiveTokens"] == context["estimatedTokens"]
    assert stats["archiveTokens"] > stats["activeTokens"] > 0

    archive = ok(
        await client.get(f"{API}/sessions/mixed/archives/archive_001", headers=tenant.read)
    )
    assert archive["overview"] == markdown
    assert [m["parts"][0]["text"] for m in archive["messages"]] == [
        messages[0]["content"],
        messages[1]["content"],
    ]

    # And back: what /api/v1 appends next is in /v1's context after the summary.
    await append(client, tenant.write, "mixed", user("Then write the migration."))
    v1_context = await client.get(f"/v1/sessions/{v1_id}/context", headers=tenant.read)
    sent = v1_context.json()["messages"]
    assert sent[0]["content"].startswith("[Session History Summary]")
    assert sent[-1] == {"role": "user", "content": "Then write the migration."}


async def test_context_within_a_small_budget(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    facts = [f"Decision {i}: keep table t{i} in region eu-{i}." for i in range(60)]
    long_messages = [user(f"Note {i}: " + "details " * 60) for i in range(12)]
    await append(client, tenant.write, "tight", user("Facts:\n" + "\n".join(facts)))
    v1_id = await agent_session_id(client, tenant, "tight")
    done = await client.post(
        f"/v1/sessions/{v1_id}/commit",
        json={"keep_recent_count": 0, "wait": True},
        headers=tenant.write,
    )
    assert done.json()["status"] == "done"
    await append(client, tenant.write, "tight", *long_messages)
    full = ok(await client.get(f"{API}/sessions/tight/context", headers=tenant.read))
    assert len(full["messages"]) == 12
    wm = await client.get(f"/v1/sessions/{v1_id}/working-memory", headers=tenant.read)
    # Half the budget is the summary's most: below its size, so it is cut to fit.
    budget = wm.json()["tokens"] + 150
    small = ok(
        await client.get(
            f"{API}/sessions/tight/context", params={"token_budget": budget}, headers=tenant.read
        )
    )
    assert small["estimatedTokens"] <= budget
    assert 0 < len(small["messages"]) < 12
    assert small["messages"][-1] == full["messages"][-1]
    assert small["latest_archive_overview"] != full["latest_archive_overview"]
    assert "[cut" in small["latest_archive_overview"]
    assert small["working_memory"] == full["working_memory"]
    for budget in (0, 10_000_001, "many"):
        response = await client.get(
            f"{API}/sessions/tight/context", params={"token_budget": budget}, headers=tenant.read
        )
        error = failed(response, "INVALID_ARGUMENT", 400)
        assert validation_locs(error) == [["query", "token_budget"]]
