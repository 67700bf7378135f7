"""The messages an archive job reads: every message of its range in seq order, read as JSON arrays
of ``MESSAGES_PER_ARRAY``, with the seqs retracted among them, across the pieces of a fork's
lineage. Compared with the messages as the API stores and lists them."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from app.archives.job_repository import MESSAGES_PER_ARRAY, JobRepository
from app.db import Database
from app.tenancy.principal import Scope
from tests.conftest import TenantKeys
from tests.support.api import append, create_session

PER = MESSAGES_PER_ARRAY


def _messages(count: int, first: int = 1) -> list[dict[str, Any]]:
    """Messages that differ in shape too: content parts, tool calls, nested values."""
    made: list[dict[str, Any]] = []
    for seq in range(first, first + count):
        if seq % 5 == 0:
            made.append({"role": "user", "content": [{"type": "text", "text": f"part {seq}"}]})
        elif seq % 7 == 0:
            made.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"c{seq}",
                            "type": "function",
                            "function": {"name": "look", "arguments": f'{{"n": {seq}}}'},
                        }
                    ],
                }
            )
            made.append({"role": "tool", "tool_call_id": f"c{seq}", "content": f"found {seq} ü"})
        else:
            made.append({"role": "user", "content": f'message {seq}: 1.50 €, "quoted"\n'})
    return made[:count]


async def _stored(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str, upto: int
) -> list[dict[str, Any]]:
    response = await client.get(
        f"/v1/sessions/{agent_session_id}/messages",
        params={"limit": 1000},
        headers=keys.read,
    )
    assert response.status_code == 200, response.text
    found = {item["seq"]: item["message"] for item in response.json()["items"]}
    return [found[seq] for seq in range(1, upto + 1)]


async def _retract(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str, seq: int
) -> None:
    response = await client.post(
        f"/v1/sessions/{agent_session_id}/messages:retract", json={"seq": seq}, headers=keys.write
    )
    assert response.status_code == 200, response.text


async def _covered(
    database: Database, keys: TenantKeys, agent_session_id: str, start_seq: int, end_seq: int
) -> tuple[list[dict[str, Any]], set[int]]:
    async with database.tenant(keys.tenant_id) as db:
        return await JobRepository(db, Scope(keys.tenant_id)).covered_messages(
            uuid.UUID(agent_session_id), start_seq, end_seq
        )


@pytest.mark.parametrize(
    ("count", "start_seq", "end_seq", "retracted"),
    [
        (1, 1, 1, set()),
        (PER - 1, 1, PER - 1, {PER - 1}),
        (PER, 1, PER, {1, PER}),
        (PER + 1, 1, PER + 1, {PER, PER + 1}),
        (2 * PER + 3, 1, 2 * PER + 3, {PER + 1, 2 * PER}),
        # A range that starts and ends inside arrays, and retractions outside it.
        (2 * PER + 3, PER - 2, 2 * PER + 1, {PER - 3, PER, 2 * PER + 2}),
    ],
)
async def test_the_range_comes_whole_in_order_with_its_retractions(
    client: httpx.AsyncClient,
    database: Database,
    tenant: TenantKeys,
    count: int,
    start_seq: int,
    end_seq: int,
    retracted: set[int],
) -> None:
    agent_session_id = await create_session(client, tenant)
    await append(client, tenant, agent_session_id, _messages(count))
    stored = await _stored(client, tenant, agent_session_id, count)
    for seq in sorted(retracted):
        await _retract(client, tenant, agent_session_id, seq)

    messages, found = await _covered(database, tenant, agent_session_id, start_seq, end_seq)

    assert messages == stored[start_seq - 1 : end_seq]
    assert found == {seq for seq in retracted if start_seq <= seq <= end_seq}


async def test_a_fork_reads_its_ancestor_s_messages_then_its_own(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    parent = await create_session(client, tenant)
    await append(client, tenant, parent, _messages(PER + 10))
    forked = await client.post(
        f"/v1/sessions/{parent}:fork", json={"at_seq": PER + 5}, headers=tenant.write
    )
    assert forked.status_code == 201, forked.text
    fork = forked.json()["id"]
    await append(client, tenant, fork, _messages(PER, first=PER + 6))
    inherited = await _stored(client, tenant, parent, PER + 5)
    own = await _stored(client, tenant, fork, 2 * PER + 5)
    assert own[: PER + 5] == inherited
    # Retracted in the fork: one inherited message and one of its own; in the parent, one the
    # fork shares and one after the fork point (neither is the fork's).
    await _retract(client, tenant, fork, 3)
    await _retract(client, tenant, fork, PER + 7)
    await _retract(client, tenant, parent, PER + 9)

    messages, found = await _covered(database, tenant, fork, 2, 2 * PER + 5)

    assert messages == own[1:]
    assert found == {3, PER + 7}
    parent_messages, parent_found = await _covered(database, tenant, parent, 1, PER + 10)
    assert len(parent_messages) == PER + 10
    assert parent_found == {PER + 9}
