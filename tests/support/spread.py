"""A tenant whose users' text and ids are spread through every feature: agent sessions, messages
with tool calls, archives, working memory, memories, pins, a retraction, a redaction, a recorded
context and a fork. Shared by the erasure and the export tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.tenants import TenantKeys

WEBHOOK = {"url": "https://93.184.216.34/hooks", "events": ["archive.done", "memory.changed"]}


@dataclass
class Person:
    """A user whose marker and id were spread through every feature."""

    user_id: str
    marker: str
    agent_session_ids: list[str] = field(default_factory=list)
    memory_ids: list[str] = field(default_factory=list)
    key: str = ""

    def needles(self) -> list[str]:
        return [self.marker, self.user_id, *self.agent_session_ids, *self.memory_ids]


def messages_of(marker: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"Please fix app/{marker}/invoice.py, totals are wrong."},
        {"role": "assistant", "content": f"Looking at app/{marker}/invoice.py now."},
        {"role": "user", "content": f"I prefer {marker} tea; my password={marker}-secret."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{marker[-6:]}",
                    "type": "function",
                    "function": {"name": "read_notes", "arguments": f'{{"q": "{marker}"}}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"call_{marker[-6:]}", "content": f"notes: {marker}"},
        {"role": "assistant", "content": f"Noted, {marker} tea it is."},
    ]


async def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, (response.request.url, response.text)
    return response.json() if response.content else None


async def spread(client: httpx.AsyncClient, keys: TenantKeys, person: Person) -> None:
    """Agent sessions (named, with metadata), messages with tool calls and results, appended
    and created under idempotency keys, two commits (archives, working memory, memories,
    webhook deliveries), pins, a retraction, a redaction, a recorded context, and a key bound to
    the user."""
    admin = keys.headers(keys.admin)
    issued = await ok(
        await client.post(
            "/v1/keys",
            json={"role": "writer", "user_id": person.user_id, "name": f"key {person.marker}"},
            headers=admin,
        ),
        201,
    )
    person.key = issued["key"]
    for number in (1, 2):
        write = {**keys.write, "Idempotency-Key": f"create-{person.marker}-{number}"}
        created = await ok(
            await client.post(
                "/v1/sessions",
                json={
                    "external_id": f"{person.marker}-{number}",
                    "user_id": person.user_id,
                    "metadata": {"about": person.marker},
                },
                headers=write,
            ),
            201,
        )
        sid = created["id"]
        person.agent_session_ids.append(sid)
        await ok(
            await client.post(
                f"/v1/sessions/{sid}/messages:batch",
                json={"messages": messages_of(person.marker)},
                headers={**keys.write, "Idempotency-Key": f"append-{person.marker}-{number}"},
            ),
            201,
        )
        await ok(
            await client.post(
                f"/v1/sessions/{sid}/pins", json={"message_seq": 3}, headers=keys.write
            ),
            201,
        )
        await ok(
            await client.post(
                f"/v1/sessions/{sid}/pins",
                json={"text": f"remember {person.marker}"},
                headers=keys.write,
            ),
            201,
        )
        done = await ok(
            await client.post(
                f"/v1/sessions/{sid}/commit",
                json={"keep_recent_count": 0, "wait": True},
                headers=keys.write,
            )
        )
        assert done["status"] == "done", done
        later = [
            {"role": "user", "content": f"Also, {person.marker} is my cat's name."},
            {"role": "user", "content": f"Scratch that about {person.marker}."},
            {"role": "assistant", "content": f"Forgetting {person.marker}."},
        ]
        await ok(
            await client.post(
                f"/v1/sessions/{sid}/messages:batch", json={"messages": later}, headers=keys.write
            ),
            201,
        )
        await ok(
            await client.post(
                f"/v1/sessions/{sid}/messages:retract", json={"seq": 8}, headers=keys.write
            )
        )
        await ok(
            await client.post(
                f"/v1/sessions/{sid}/messages/7:redact",
                json={"reason": f"asked by {person.marker}"},
                headers=keys.write,
            )
        )
        done = await ok(
            await client.post(
                f"/v1/sessions/{sid}/commit",
                json={"keep_recent_count": 1, "wait": True},
                headers=keys.write,
            )
        )
        assert done["status"] == "done", done
        # A recorded context: the ledger names the agent session and the memories recalled.
        recorded = await ok(
            await client.get(
                f"/v1/sessions/{sid}/context",
                params={"record": "true", "recall": f"{person.marker} tea"},
                headers=keys.read,
            )
        )
        assert recorded["context_id"] is not None
        # A fork shares the agent session's history (its lineage names it) and adds its own.
        fork = await ok(
            await client.post(f"/v1/sessions/{sid}:fork", json={"at_seq": 3}, headers=keys.write),
            201,
        )
        await ok(
            await client.post(
                f"/v1/sessions/{fork['id']}/messages",
                json={"role": "user", "content": f"In the fork, {person.marker} again."},
                headers=keys.write,
            ),
            201,
        )
    memories = await ok(
        await client.get("/v1/memories", params={"user_id": person.user_id}, headers=keys.read)
    )
    person.memory_ids = [item["id"] for item in memories["items"]]
