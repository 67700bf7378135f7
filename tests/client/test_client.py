"""The async client against the real app: every route it wraps, typed results, typed errors."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import openai
import pytest

from tests.conftest import TenantKeys
from tests.support.fake_openai import FakeOpenAI
from workmem_client import (
    ArchiveStatus,
    AsyncWorkmemClient,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    UnauthenticatedError,
    ValidationError,
    WorkmemError,
)

Factory = Callable[..., AsyncWorkmemClient]

TOOL_CALL = {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "Fix the KeyError in app/models/user.py. Never touch prod."},
    {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "KeyError: 'email' at line 12"},
    {"role": "assistant", "content": "I decided to add a default email in app/models/user.py."},
    {"role": "user", "content": "Good. Is a migration needed?"},
]


async def test_a_session_from_first_message_to_context(
    workmem_for: Factory, tenant: TenantKeys
) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session(external_id="client-flow", user_id="ana")
        assert created.external_id == "client-flow"
        assert created.message_count == 0
        one = await workmem.append(created.id, CONVERSATION[0])
        assert one.message.seq == 1
        assert one.live_message_count == 1
        rest = await workmem.append_batch(created.id, CONVERSATION[1:])
        assert [m.seq for m in rest.messages] == [2, 3, 4, 5]
        assert rest.messages[0].message["tool_calls"] == [TOOL_CALL]
        page = await workmem.messages(created.id, after_seq=3)
        assert [m.seq for m in page.items] == [4, 5]
        assert (await workmem.get_session(created.id)).message_count == 5

        committed = await workmem.commit(created.id, keep_recent_count=1, wait=True)
        assert committed.status == "done"
        assert committed.archive is not None
        assert (committed.archive.start_seq, committed.archive.end_seq) == (1, 4)
        assert committed.working_memory is not None
        files = committed.working_memory.sections["Files & Context"]
        assert "app/models/user.py" in files

        current = await workmem.working_memory(created.id)
        assert current.archive_seq == 1
        assert current.markdown == committed.working_memory.markdown
        history = await workmem.working_memory_history(created.id, section="Files & Context")
        assert [(v.archive_seq, v.section) for v in history.items] == [(1, "Files & Context")]
        archives = await workmem.archives(created.id)
        assert [a.status for a in archives.items] == [ArchiveStatus.DONE]
        expanded = await workmem.archive(created.id, 1)
        assert [m.seq for m in expanded.messages] == [1, 2, 3, 4]

        context = await workmem.context(created.id, token_budget=8000)
        assert context.messages[0]["content"].startswith("[Session History Summary]")
        assert context.messages[-1] == CONVERSATION[-1]
        assert context.working_memory is not None
        assert context.working_memory.archive_seq == 1

        messages = await workmem.chat_messages(
            created.id, system_prompt="You are terse.", token_budget=8000
        )
        assert messages[0]["role"] == "system"
        assert messages[0]["content"].startswith("You are terse.\n\n")
        assert context.system_prompt_addition in messages[0]["content"]
        assert messages[1:] == context.messages

        compacted = await workmem.compact(created.id, token_budget=8000)
        assert compacted.commit.status == "done"
        assert compacted.commit.archive_seq == 2
        found = await workmem.find_session("client-flow")
        assert found is not None
        assert found.archive_count == 2
        again = await workmem.session_for("client-flow")
        assert again.id == created.id

        await workmem.delete_session(created.id)
        with pytest.raises(NotFoundError):
            await workmem.get_session(created.id)
        assert await workmem.find_session("client-flow") is None


async def test_session_for_creates_once(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        first = await workmem.session_for("made-once", user_id="ben")
        second = await workmem.session_for("made-once", user_id="someone else")
        assert first.id == second.id
        assert second.user_id == "ben"


async def test_errors_carry_the_problem_type(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        missing = uuid.uuid4()
        with pytest.raises(NotFoundError) as not_found:
            await workmem.get_session(missing)
        assert (not_found.value.type, not_found.value.status) == ("not_found", 404)
        assert str(missing) in not_found.value.detail

        created = await workmem.create_session(external_id="errors")
        with pytest.raises(ConflictError) as conflict:
            await workmem.create_session(external_id="errors")
        assert conflict.value.type == "conflict"

        with pytest.raises(ValidationError) as invalid:
            await workmem.append_batch(
                created.id,
                [{"role": "user", "content": "kept?"}, {"role": "robot", "content": "x"}],
            )
        assert invalid.value.type == "validation_error"
        assert invalid.value.errors is not None
        assert ["body", "messages", 1, "role"] in [item["loc"] for item in invalid.value.errors]
        # A batch is atomic: the valid first message was not stored either.
        assert (await workmem.get_session(created.id)).message_count == 0

    async with workmem_for(tenant.reader) as reader:
        with pytest.raises(ForbiddenError) as forbidden:
            await reader.append(created.id, {"role": "user", "content": "x"})
        assert forbidden.value.type == "forbidden"
    async with workmem_for("wm_notakey_" + "x" * 40) as stranger:
        with pytest.raises(UnauthenticatedError) as unauthenticated:
            await stranger.list_sessions()
        assert isinstance(unauthenticated.value, WorkmemError)
        assert unauthenticated.value.status == 401


async def test_chat_messages_are_accepted_by_a_strict_chat_server(
    workmem_for: Factory, tenant: TenantKeys, fake_openai: FakeOpenAI
) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session()
        await workmem.append_batch(created.id, CONVERSATION)
        await workmem.commit(created.id, keep_recent_count=2, wait=True)
        messages = await workmem.chat_messages(created.id, system_prompt="Be brief.")
    async with openai.AsyncOpenAI(
        base_url=fake_openai.base_url, api_key="x", max_retries=0
    ) as model:
        reply = await model.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == "ok"
    sent = fake_openai.requests[-1].body["messages"]
    assert sent[0]["role"] == "system"
    assert sent[1]["content"].startswith("[Session History Summary]")


async def test_memories_search_is_typed(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session(user_id="cleo")
        await workmem.append(
            created.id, {"role": "user", "content": "I work as a data engineer in Porto."}
        )
        committed = await workmem.commit(created.id, keep_recent_count=0, wait=True)
        assert committed.archive is not None
        assert committed.archive.memories is not None
        assert committed.archive.memories.added >= 1
        found = await workmem.search_memories("data engineer", user_id="cleo")
        assert found.items
        assert "data engineer" in found.items[0].content
        assert found.items[0].score > 0


async def test_a_write_sent_again_under_its_idempotency_key_is_stored_once(
    workmem_for: Factory, tenant: TenantKeys
) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session()
        message = {"role": "user", "content": "Ship the invoice fix."}
        first = await workmem.append(created.id, message, idempotency_key="turn-1")
        again = await workmem.append(created.id, message, idempotency_key="turn-1")
        assert again.message.seq == first.message.seq == 1
        batch = [{"role": "assistant", "content": "On it."}]
        sent = await workmem.append_batch(created.id, batch, idempotency_key="turn-1-reply")
        resent = await workmem.append_batch(created.id, batch, idempotency_key="turn-1-reply")
        assert [m.seq for m in resent.messages] == [m.seq for m in sent.messages] == [2]
        committed = await workmem.commit(created.id, keep_recent_count=0, idempotency_key="c-1")
        recommitted = await workmem.commit(created.id, keep_recent_count=0, idempotency_key="c-1")
        assert committed.archive is not None
        assert recommitted.archive is not None
        assert recommitted.archive.archive_seq == committed.archive.archive_seq == 1
        assert recommitted.status == committed.status == "accepted"
        stored = (await workmem.messages(created.id)).items
        assert [m.seq for m in stored] == [1, 2]
        unkeyed = await workmem.append(created.id, message)
        assert unkeyed.message.seq == 3, "without a key, a repeat is a new message"


async def test_commit_with_turn_retention(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session()
        await workmem.append_batch(created.id, CONVERSATION)
        # Two turns (1-4 and 5): the newest one is kept, the first archived.
        committed = await workmem.commit(
            created.id,
            retention_mode="turn_budget",
            keep_recent_turn_count=1,
            retained_message_token_budget=4000,
            min_raw_tail_steps=1,
        )
        assert committed.archive is not None
        assert (committed.archive.end_seq, committed.archive.tail_start_seq) == (4, 5)
        with pytest.raises(ValidationError):
            await workmem.commit(created.id, keep_recent_turn_count=1)
        assert (await workmem.get_session(created.id)).archive_count == 1
