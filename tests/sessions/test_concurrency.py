"""Appends under contention, and pending_tokens against its recomputation from the rows."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.archives.service import ArchiveService
from app.db import Database
from app.sessions.appending import append_within
from app.sessions.pending import advance_pending, leaving_seqs
from app.sessions.schemas import AgentSessionCreate, MessageCreate
from app.sessions.service import AgentSessionService, Limits
from tests.conftest import TenantKeys, make_tenant
from tests.support.api import create_session


async def test_eight_concurrent_appenders_get_gap_free_seqs(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)

    async def appender(worker: int) -> list[int]:
        seqs = []
        for index in range(15):
            if index % 3 == 0:
                response = await client.post(
                    f"/v1/sessions/{agent_session_id}/messages:batch",
                    json={
                        "messages": [
                            {"role": "user", "content": f"w{worker} b{index} {n}"} for n in range(3)
                        ]
                    },
                    headers=tenant.write,
                )
                assert response.status_code == 201, response.text
                seqs += [m["seq"] for m in response.json()["messages"]]
            else:
                response = await client.post(
                    f"/v1/sessions/{agent_session_id}/messages",
                    json={"role": "assistant", "content": f"w{worker} m{index}"},
                    headers=tenant.write,
                )
                assert response.status_code == 201, response.text
                seqs.append(response.json()["message"]["seq"])
        return seqs

    results = await asyncio.gather(*(appender(worker) for worker in range(8)))
    every = sorted(seq for seqs in results for seq in seqs)
    assert every == list(range(1, len(every) + 1))
    assert len(every) == 8 * (5 * 3 + 10)
    for seqs in results:
        assert seqs == sorted(seqs)
    page = await client.get(
        f"/v1/sessions/{agent_session_id}/messages", params={"limit": 1000}, headers=tenant.read
    )
    assert [m["seq"] for m in page.json()["items"]] == every


def test_leaving_window_rule_by_hand() -> None:
    # keep 2, nothing archived: the 3rd message pushes seq 1 out, the 4th pushes seq 2.
    assert leaving_seqs(last_seq=0, archived_upto_seq=0, keep=2, count=4) == [1, 2]
    assert (
        advance_pending(
            pending_tokens=0,
            last_seq=0,
            keep=2,
            leaving=[1, 2],
            new_tokens=[5, 7, 11, 13],
            stored_tokens={},
        )
        == 5 + 7
    )
    assert (
        advance_pending(
            pending_tokens=3,
            last_seq=2,
            keep=2,
            leaving=leaving_seqs(last_seq=2, archived_upto_seq=0, keep=2, count=1),
            new_tokens=[11],
            stored_tokens={1: 5},
        )
        == 3 + 5
    )
    assert (
        advance_pending(
            pending_tokens=0,
            last_seq=9,
            keep=0,
            leaving=[],
            new_tokens=[1, 2],
            stored_tokens={},
        )
        == 3
    )
    assert leaving_seqs(last_seq=0, archived_upto_seq=0, keep=10, count=10) == []
    assert leaving_seqs(last_seq=10, archived_upto_seq=0, keep=10, count=1) == [1]


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=80)
batches = st.lists(st.lists(texts, min_size=1, max_size=12), min_size=1, max_size=8)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(keep=st.sampled_from([0, 1, 10]), plan=batches)
def test_pending_tokens_equals_recomputation(
    database_url: str, keep: int, plan: list[list[str]]
) -> None:
    async def scenario() -> None:
        database = Database.from_url(database_url, pool_size=1)
        try:
            keys = await make_tenant(database)
            principal = keys.principal()
            async with database.tenant(keys.tenant_id) as db:
                row = await AgentSessionService(db, principal).create(
                    AgentSessionCreate(keep_recent_count=keep)
                )
            for batch in plan:
                messages = [MessageCreate(role="user", content=text) for text in batch]
                async with database.tenant(keys.tenant_id) as db:
                    await append_within(
                        db, principal.scope, row.agent_session_id, messages, Limits()
                    )
                async with database.tenant(keys.tenant_id) as db:
                    drift = await AgentSessionService(db, principal).check_pending(
                        row.agent_session_id, repair=False
                    )
                assert drift.stored == drift.recomputed
        finally:
            await database.dispose()

    asyncio.run(scenario())


@dataclass
class PendingModel:
    """The pure rule of ``app.sessions.pending``, run beside the database as its specification."""

    keep: int
    last_seq: int = 0
    archived_upto_seq: int = 0
    pending: int = 0
    tokens: dict[int, int] = field(default_factory=dict)

    def append(self, new_tokens: list[int]) -> None:
        leaving = leaving_seqs(
            last_seq=self.last_seq,
            archived_upto_seq=self.archived_upto_seq,
            keep=self.keep,
            count=len(new_tokens),
        )
        self.pending = advance_pending(
            pending_tokens=self.pending,
            last_seq=self.last_seq,
            keep=self.keep,
            leaving=leaving,
            new_tokens=new_tokens,
            stored_tokens=self.tokens,
        )
        for offset, count in enumerate(new_tokens, start=1):
            self.tokens[self.last_seq + offset] = count
        self.last_seq += len(new_tokens)

    def commit(self, keep: int) -> None:
        # Only user messages here, so no tool group moves the split (DESIGN 6.1).
        live = self.last_seq - self.archived_upto_seq
        if live > keep:
            self.archived_upto_seq = self.last_seq - keep
        self.keep, self.pending = keep, 0


steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(texts, min_size=1, max_size=6)),
        st.tuples(st.just("commit"), st.sampled_from([0, 1, 2, 5])),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(keep=st.sampled_from([0, 1, 3]), plan=steps)
def test_the_sql_append_keeps_pending_tokens_by_the_python_rule(
    database_url: str, keep: int, plan: list[tuple[str, Any]]
) -> None:
    """The same random appends and commits through the service (whose append is one SQL
    function) and through the pure rule give the same counter after every step."""

    async def scenario() -> None:
        database = Database.from_url(database_url, pool_size=1)
        try:
            keys = await make_tenant(database)
            principal = keys.principal()
            async with database.tenant(keys.tenant_id) as db:
                row = await AgentSessionService(db, principal).create(
                    AgentSessionCreate(keep_recent_count=keep)
                )
            model = PendingModel(keep)
            for action, argument in plan:
                async with database.tenant(keys.tenant_id) as db:
                    if action == "append":
                        messages = [MessageCreate(role="user", content=text) for text in argument]
                        outcome = await append_within(
                            db,
                            principal.scope,
                            row.agent_session_id,
                            messages,
                            Limits(),
                        )
                        model.append([message.token_count for message in outcome.messages])
                        assert outcome.pending_tokens == model.pending
                    else:
                        await ArchiveService(db, principal).commit(row.agent_session_id, argument)
                        model.commit(argument)
                async with database.tenant(keys.tenant_id) as db:
                    stored = await AgentSessionService(db, principal).get(row.agent_session_id)
                assert (stored.pending_tokens, stored.archived_upto_seq, stored.last_seq) == (
                    model.pending,
                    model.archived_upto_seq,
                    model.last_seq,
                )
        finally:
            await database.dispose()

    asyncio.run(scenario())
