"""The context with archives pending, running, failed and done, in every combination.

Workers process one agent session's archives in order, but a failed archive does not block the
next, and a retry puts an old archive back to pending behind a done one: so any status can sit at
any position. The combinations are set in the database directly; a second test drives the real
worker through running, done and failed with a generator the test holds at its gate.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import pytest
from sqlalchemy import insert, text

from app.archives.generation import Generated, WorkingMemoryGenerator
from app.archives.plan import Resume
from app.archives.worker import ArchiveWorker, WorkerConfig
from app.archives.working_memory import WorkingMemory
from app.db import Database
from app.llm.ports import PermanentModelError
from app.models import WmSectionVersion
from app.wm.sections import SECTIONS, Section, render
from tests.conftest import AppFactory, TenantKeys, make_tenant
from tests.context.helpers import SUMMARY_PREFIX, assert_well_formed, get_context
from tests.support.api import append, assistant, commit, create_session, user

STATUSES = ("pending", "running", "failed", "done")
ARCHIVES = 3
PER_ARCHIVE = 4
LAST_SEQ = ARCHIVES * PER_ARCHIVE + 2


def numbered(first: int, count: int) -> list[dict[str, Any]]:
    return [
        user(f"m{seq}") if seq % 2 else assistant(f"m{seq}") for seq in range(first, first + count)
    ]


async def set_status(
    database: Database, agent_session_id: str, archive_seq: int, status: str
) -> None:
    values = {
        "pending": "status = 'pending'",
        "running": "status = 'running', attempt = 1, lease_until = now() + interval '1 hour'",
        "failed": "status = 'failed', attempt = 5, last_error = 'model down',"
        " error_stage = 'generate', finished_at = now()",
        "done": "status = 'done', attempt = 1, finished_at = now(),"
        " overview = :overview, abstract = :abstract",
    }[status]
    sections = dict.fromkeys(SECTIONS, "")
    sections[Section.CURRENT_STATE] = f"State after archive {archive_seq}."
    async with database.unscoped() as db:
        await db.execute(
            text(
                f"UPDATE archives SET {values}"  # noqa: S608 - fixed fragments above
                " WHERE agent_session_id = :sid AND archive_seq = :seq"
            ),
            {
                "sid": agent_session_id,
                "seq": archive_seq,
                "overview": render(sections),
                "abstract": f"archive {archive_seq}",
            }
            if status == "done"
            else {"sid": agent_session_id, "seq": archive_seq},
        )
        if status != "done":
            return
        tenant_id = await db.scalar(
            text("SELECT tenant_id FROM agent_sessions WHERE agent_session_id = :sid"),
            {"sid": agent_session_id},
        )
        await db.execute(
            insert(WmSectionVersion),
            [
                {
                    "tenant_id": tenant_id,
                    "agent_session_id": uuid.UUID(agent_session_id),
                    "archive_seq": archive_seq,
                    "section": section.value,
                    "position": position,
                    "content": sections[section],
                    "content_sha256": "0" * 64,
                    "token_count": 6 if sections[section] else 0,
                    "item_count": 1 if sections[section] else 0,
                    "op_applied": "UPDATE",
                    "reason": "accepted",
                    "generator": "offline",
                }
                for position, section in enumerate(SECTIONS, start=1)
            ],
        )


async def archived_session(client: httpx.AsyncClient, keys: TenantKeys, archives: int) -> str:
    sid = await create_session(client, keys)
    for index in range(archives):
        await append(client, keys, sid, numbered(index * PER_ARCHIVE + 1, PER_ARCHIVE))
        response = await commit(client, keys, sid, keep_recent_count=0)
        assert response.status_code == 202, response.text
    await append(client, keys, sid, numbered(archives * PER_ARCHIVE + 1, 2))
    return sid


@pytest.mark.parametrize("statuses", list(itertools.product(STATUSES, repeat=ARCHIVES)))
async def test_every_combination_of_archive_statuses(
    client: httpx.AsyncClient,
    admin_database: Database,
    tenant: TenantKeys,
    statuses: tuple[str, ...],
) -> None:
    sid = await archived_session(client, tenant, ARCHIVES)
    for archive_seq, status in enumerate(statuses, start=1):
        await set_status(admin_database, sid, archive_seq, status)
    context = await get_context(client, tenant, sid)
    assert_well_formed(context)

    done = [seq for seq, status in enumerate(statuses, start=1) if status == "done"]
    summary_seq = max(done, default=0)
    floor = summary_seq * PER_ARCHIVE
    messages = context["messages"]
    if summary_seq:
        assert messages[0]["content"].startswith(SUMMARY_PREFIX)
        assert f"State after archive {summary_seq}." in messages[0]["content"]
        assert context["working_memory"]["archive_seq"] == summary_seq
        assert context["working_memory"]["covered_end_seq"] == floor
        messages = messages[1:]
    else:
        assert context["working_memory"] is None
    # Every message the summary does not cover is there raw, whatever its archive's status.
    assert [m["content"] for m in messages] == [f"m{s}" for s in range(floor + 1, LAST_SEQ + 1)]
    assert context["stats"]["messages_omitted"] == 0
    assert [
        (entry["archive_seq"], entry["status"], entry["in_context"])
        for entry in context["archive_index"]
    ] == [
        (seq, statuses[seq - 1], "summary" if seq <= summary_seq else "raw")
        for seq in range(ARCHIVES, 0, -1)
    ]
    hint = context["system_prompt_addition"]
    assert f"GET /v1/sessions/{sid}/archives/{{archive_seq}}" in hint
    if summary_seq == 0:
        assert hint.startswith(f"Messages 1-{ARCHIVES * PER_ARCHIVE} of this conversation are")
    elif summary_seq == ARCHIVES - 1:
        assert f"Archive {ARCHIVES} (messages {floor + 1}-{ARCHIVES * PER_ARCHIVE}) is not" in hint
    elif summary_seq < ARCHIVES:
        assert (
            f"Archives {summary_seq + 1}-{ARCHIVES} (messages {floor + 1}-{ARCHIVES * PER_ARCHIVE})"
            " are not summarised yet"
        ) in hint
    else:
        assert "not summarised" not in hint
    assert context["stats"]["newest_user_seq"] == LAST_SEQ - 1


async def test_a_done_archive_older_than_the_index_still_opens_the_messages(
    client: httpx.AsyncClient, admin_database: Database, tenant: TenantKeys
) -> None:
    archives = 22
    sid = await archived_session(client, tenant, archives)
    await set_status(admin_database, sid, 1, "done")
    for archive_seq in range(2, archives + 1):
        await set_status(admin_database, sid, archive_seq, "failed")
    context = await get_context(client, tenant, sid)
    assert_well_formed(context)
    assert "State after archive 1." in context["messages"][0]["content"]
    assert len(context["archive_index"]) == 20
    assert context["archive_count"] == archives
    assert [m["content"] for m in context["messages"][1:]] == [
        f"m{s}" for s in range(PER_ARCHIVE + 1, archives * PER_ARCHIVE + 3)
    ]
    assert {entry["in_context"] for entry in context["archive_index"]} == {"raw"}
    assert (
        f"Archives 2-{archives} (messages 5-{archives * PER_ARCHIVE})"
        in (context["system_prompt_addition"])
    )


class GatedGenerator(WorkingMemoryGenerator):
    """The offline generator behind a gate the test opens; fails when told to."""

    def __init__(self) -> None:
        super().__init__(None)
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.fail = False

    async def generate(
        self,
        prior: WorkingMemory,
        messages: Sequence[Mapping[str, object]],
        *,
        seqs: Sequence[int] | None = None,
        pins: Sequence[str] = (),
        pinned_seqs: frozenset[int] = frozenset(),
        resume: Resume | None = None,
    ) -> Generated:
        self.entered.set()
        await self.gate.wait()
        if self.fail:
            raise PermanentModelError("rejected", code="client_error", status=400)
        return await super().generate(prior, messages, seqs=seqs, pins=pins)


async def test_the_real_worker_through_running_done_and_failed(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    generator = GatedGenerator()
    worker = ArchiveWorker(
        own_database, generator, WorkerConfig(lease_s=30, max_attempts=1, poll_s=0.05)
    )
    async with app_client(own_database, generator=generator) as http:
        sid = await create_session(http, keys)

        async def state() -> tuple[list[str], list[tuple[int, str, str]], str]:
            context = await get_context(http, keys, sid)
            assert_well_formed(context)
            contents = [str(m["content"]) for m in context["messages"]]
            index = [
                (e["archive_seq"], e["status"], e["in_context"]) for e in context["archive_index"]
            ]
            return contents, index, context["system_prompt_addition"]

        await append(http, keys, sid, numbered(1, 4))
        assert (await commit(http, keys, sid, keep_recent_count=0)).status_code == 202
        contents, index, _ = await state()
        assert contents == ["m1", "m2", "m3", "m4"]
        assert index == [(1, "pending", "raw")]

        job = asyncio.create_task(worker.run_once())
        await asyncio.wait_for(generator.entered.wait(), timeout=10)
        contents, index, hint = await state()
        assert contents == ["m1", "m2", "m3", "m4"]
        assert index == [(1, "running", "raw")]
        assert hint.startswith("Messages 1-4 of this conversation are archived")
        generator.gate.set()
        await job

        contents, index, _ = await state()
        assert len(contents) == 1
        assert contents[0].startswith(SUMMARY_PREFIX)
        assert index == [(1, "done", "summary")]

        await append(http, keys, sid, numbered(5, 4))
        await commit(http, keys, sid, keep_recent_count=0)
        generator.fail = True
        await worker.run_once()
        contents, index, hint = await state()
        assert contents[0].startswith(SUMMARY_PREFIX)
        assert contents[1:] == ["m5", "m6", "m7", "m8"]
        assert index == [(2, "failed", "raw"), (1, "done", "summary")]
        assert "Archive 2 (messages 5-8) is not summarised yet" in hint

        # The next archive's update covers the failed one: its messages leave the raw part.
        generator.fail = False
        await append(http, keys, sid, numbered(9, 4))
        await commit(http, keys, sid, keep_recent_count=0)
        await worker.run_once()
        contents, index, hint = await state()
        assert len(contents) == 1
        covering = await http.get(f"/v1/sessions/{sid}/archives/3", headers=keys.read)
        assert covering.json()["covers_failed_archives"] == [2]
        assert index == [(3, "done", "summary"), (2, "failed", "summary"), (1, "done", "summary")]
        assert "not summarised" not in hint
