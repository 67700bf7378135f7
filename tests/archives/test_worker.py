"""Phase 2: claims, order, leases, retries, failures and coverage of failed archives (DESIGN 6.2)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from subprocess import STDOUT
from typing import Any

from sqlalchemy import text

from app.archives.generation import Generated, WorkingMemoryGenerator
from app.archives.plan import Resume
from app.archives.worker import ArchiveWorker, WorkerConfig
from app.archives.working_memory import WorkingMemory
from app.db import Database
from app.llm.fakes import ScriptedChatModel, tool_call
from app.llm.ports import PermanentModelError, TransientModelError
from tests.conftest import AppFactory, make_tenant
from tests.support.api import append, assistant, commit, create_session, user
from tests.support.archives import RecordingGenerator, archive_rows
from tests.support.clock import age_archive_leases
from tests.support.fake_openai import DelayedReply, FakeOpenAI

FAST = WorkerConfig(lease_s=30, max_attempts=3, poll_s=0.05, backoff_base_s=0, backoff_max_s=0)


def created(markdown: str) -> Any:
    return tool_call(json.dumps({"markdown": markdown}))


FIRST_WM = """# Working Memory

## Session Title
Billing migration

## Current State
Started.

## Task & Goals
- Never deploy on Fridays
"""


async def drain_all(workers: list[ArchiveWorker]) -> None:
    async def loop(worker: ArchiveWorker) -> None:
        idle = 0
        while idle < 3:
            if await worker.run_once() is None:
                idle += 1
                await asyncio.sleep(0.02)
            else:
                idle = 0

    await asyncio.gather(*(loop(worker) for worker in workers))


async def test_two_workers_never_share_an_archive_and_keep_order(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database) as http:
        sessions = [await create_session(http, keys) for _ in range(4)]
        for round_ in range(5):
            for index, agent_session_id in enumerate(sessions):
                await append(http, keys, agent_session_id, [user(f"s{index} r{round_}")])
                response = await commit(http, keys, agent_session_id, keep_recent_count=0)
                assert response.status_code == 202
    generator = RecordingGenerator(delay_s=0.01)
    await drain_all([ArchiveWorker(own_database, generator, FAST) for _ in range(2)])

    assert len(generator.seen) == 20
    assert len(set(generator.seen)) == 20, "an archive was processed twice"
    for index in range(4):
        rounds = [
            int(seen[0].split(" r")[1])
            for seen in generator.seen
            if seen[0].startswith(f"s{index} ")
        ]
        assert rounds == sorted(rounds) == list(range(5)), "archives of a session ran out of order"
    rows = await archive_rows(own_database, keys.tenant_id)
    assert {row["status"] for row in rows} == {"done"}
    assert {row["attempt"] for row in rows} == {1}


async def test_transient_errors_retry_then_succeed(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    chat = ScriptedChatModel([TransientModelError("timeout", code="timeout"), created(FIRST_WM)])
    worker = ArchiveWorker(own_database, WorkingMemoryGenerator(chat, fallback="none"), FAST)
    async with app_client(own_database) as http:
        agent_session_id = await create_session(http, keys)
        await append(http, keys, agent_session_id, [user("hello"), assistant("hi")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)
    await drain_all([worker])
    [row] = await archive_rows(own_database, keys.tenant_id)
    assert (row["status"], row["attempt"], row["generator"]) == ("done", 2, "llm_create")


async def test_attempts_run_out(own_database: Database, app_client: AppFactory) -> None:
    keys = await make_tenant(own_database)
    chat = ScriptedChatModel([TransientModelError("429", code="rate_limited", status=429)] * 3)
    worker = ArchiveWorker(own_database, WorkingMemoryGenerator(chat, fallback="none"), FAST)
    async with app_client(own_database) as http:
        agent_session_id = await create_session(http, keys)
        await append(http, keys, agent_session_id, [user("hello")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)
    await drain_all([worker])
    [row] = await archive_rows(own_database, keys.tenant_id)
    assert (row["status"], row["attempt"], row["error_stage"]) == ("failed", 3, "generate")
    assert "after 3 attempts" in row["last_error"]


async def test_failed_archive_does_not_block_and_is_covered_by_the_next(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    chat = ScriptedChatModel(
        [PermanentModelError("rejected", code="client_error", status=400), created(FIRST_WM)]
    )
    worker = ArchiveWorker(own_database, WorkingMemoryGenerator(chat, fallback="none"), FAST)
    async with app_client(own_database) as http:
        agent_session_id = await create_session(http, keys)
        await append(http, keys, agent_session_id, [user("the first secret is 4242")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)
        await drain_all([worker])
        await append(http, keys, agent_session_id, [user("second part")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)
        await drain_all([worker])
        first, second = await archive_rows(own_database, keys.tenant_id)
        assert (first["status"], first["attempt"], first["error_stage"]) == (
            "failed",
            1,
            "generate",
        )
        assert second["status"] == "done"
        assert second["covers_failed_archives"] == [1]
        assert "the first secret is 4242" in chat.calls[-1].user
        state = await http.get(f"/v1/sessions/{agent_session_id}", headers=keys.read)
        assert state.json()["newest_archive"]["status"] == "done"

        # The operator's retry re-queues the failed archive; it runs again and finishes.
        chat.push(created(FIRST_WM))
        retried = await http.post(
            f"/v1/sessions/{agent_session_id}/archives/1:retry", headers=keys.write
        )
        assert retried.status_code == 200
        assert retried.json()["status"] == "pending"
        again = await http.post(
            f"/v1/sessions/{agent_session_id}/archives/2:retry", headers=keys.write
        )
        assert again.status_code == 409
    await drain_all([worker])
    first, _ = await archive_rows(own_database, keys.tenant_id)
    assert (first["status"], first["attempt"]) == ("done", 1)


async def test_wait_true_returns_the_finished_working_memory(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    generator = WorkingMemoryGenerator(ScriptedChatModel([created(FIRST_WM)]))
    async with app_client(own_database, generator=generator) as http:
        agent_session_id = await create_session(http, keys)
        await append(http, keys, agent_session_id, [user("hello"), assistant("hi")])
        response = await commit(http, keys, agent_session_id, keep_recent_count=0, wait=True)
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "done"
        assert body["working_memory"]["sections"]["Session Title"] == "Billing migration"
        assert body["working_memory"]["covered_end_seq"] == 2
        current = await http.get(
            f"/v1/sessions/{agent_session_id}/working-memory", headers=keys.read
        )
        assert current.json()["markdown"] == body["working_memory"]["markdown"]


async def test_wait_false_answers_202_and_the_background_worker_finishes(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    generator = RecordingGenerator()
    async with app_client(
        own_database, generator=generator, worker_enabled=True, worker_poll_s=0.05
    ) as http:
        agent_session_id = await create_session(http, keys)
        await append(http, keys, agent_session_id, [user("hello")])
        response = await commit(http, keys, agent_session_id, keep_recent_count=0)
        assert response.status_code == 202
        assert response.json()["status"] == "accepted"
        deadline = time.monotonic() + 30
        status = "pending"
        while status != "done" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            listed = await http.get(f"/v1/sessions/{agent_session_id}/archives", headers=keys.read)
            status = listed.json()["items"][0]["status"]
        assert status == "done"
        assert generator.seen == [("hello",)]


async def test_wait_timeout_answers_running(own_database: Database, app_client: AppFactory) -> None:
    keys = await make_tenant(own_database)
    generator = RecordingGenerator(delay_s=1.0)
    async with app_client(own_database, generator=generator) as http:
        agent_session_id = await create_session(http, keys)
        await append(http, keys, agent_session_id, [user("hello")])
        response = await commit(
            http, keys, agent_session_id, keep_recent_count=0, wait=True, wait_timeout_s=0.2
        )
        assert response.status_code == 202
        assert response.json()["status"] == "running"


def workmem_command() -> list[str]:
    script = Path(sys.executable).parent / "workmem"
    return [str(script)] if script.exists() else [sys.executable, "-m", "app.cli"]


async def test_killed_worker_leaves_an_archive_another_finishes(
    own_database: Database, own_admin_database: Database, app_client: AppFactory, tmp_path: Path
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database) as http:
        agent_session_id = await create_session(http, keys)
        await append(http, keys, agent_session_id, [user("keep me safe"), assistant("ok")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)

    url = own_database.engine.url.render_as_string(hide_password=False)
    with FakeOpenAI(default_reply=DelayedReply(60)) as model:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "WORKMEM_LLM_PROVIDER": "openai",
            "WORKMEM_LLM_API_KEY": "test-key",
            "WORKMEM_LLM_BASE_URL": model.base_url,
            "WORKMEM_LLM_TIMEOUT_S": "120",
            "WORKMEM_LLM_FALLBACK": "none",
            "WORKMEM_WORKER_LEASE_S": "60",
            "WORKMEM_WORKER_POLL_S": "0.1",
        }
        log_path = tmp_path / "worker.log"
        with log_path.open("w") as log:
            process = await asyncio.create_subprocess_exec(
                *workmem_command(), "worker", env=env, stdout=log, stderr=STDOUT
            )
        try:
            deadline = time.monotonic() + 60
            while not model.requests and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            assert model.requests, log_path.read_text()
            [row] = await archive_rows(own_database, keys.tenant_id)
            assert (row["status"], row["attempt"]) == ("running", 1)
        finally:
            process.send_signal(signal.SIGKILL)
            await asyncio.wait_for(process.wait(), timeout=10)
    assert process.returncode == -signal.SIGKILL

    survivor = ArchiveWorker(own_database, RecordingGenerator(), FAST)
    assert await survivor.run_once() is None, "the lease is still held"
    assert await age_archive_leases(own_admin_database, 61) == 1
    claim = await survivor.run_once()
    assert claim is not None
    assert claim.attempt == 2
    [row] = await archive_rows(own_database, keys.tenant_id)
    assert (row["status"], row["attempt"]) == ("done", 2)


async def test_lease_lost_writes_nothing(
    own_database: Database, own_admin_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    async with app_client(own_database) as http:
        agent_session_id = await create_session(http, keys)
        await append(http, keys, agent_session_id, [user("hello")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)

    class StealingGenerator(RecordingGenerator):
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
            generated = await super().generate(
                prior, messages, seqs=seqs, pins=pins, pinned_seqs=pinned_seqs
            )
            async with own_admin_database.unscoped() as db:  # another worker took over meanwhile
                await db.execute(text("UPDATE archives SET attempt = attempt + 1"))
            return generated

    await ArchiveWorker(own_database, StealingGenerator(), FAST).run_once()
    [row] = await archive_rows(own_database, keys.tenant_id)
    assert (row["status"], row["attempt"]) == ("running", 2)
    async with own_database.tenant(keys.tenant_id) as db:
        count = await db.scalar(text("SELECT count(*) FROM wm_section_versions"))
    assert count == 0


async def test_the_worker_loop_survives_errors_and_stops_on_request(own_database: Database) -> None:
    calls = 0

    class Flaky(ArchiveWorker):
        async def run_once(
            self, *, tenant_id: uuid.UUID | None = None, agent_session_id: uuid.UUID | None = None
        ) -> Any:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("unexpected")
            if calls == 2:
                raise OSError("connection reset")
            return await super().run_once(tenant_id=tenant_id, agent_session_id=agent_session_id)

    worker = Flaky(own_database, RecordingGenerator(), FAST)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    deadline = time.monotonic() + 20
    while calls < 4 and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, timeout=10)
    assert calls >= 4


async def test_a_failed_archive_larger_than_the_input_budget_is_covered_whole(
    own_database: Database, app_client: AppFactory
) -> None:
    """Whatever a later working memory says it covers, it received: a failed archive's messages
    all ride along with the next archive (generation batches them), none is dropped."""

    class FailingFirst(RecordingGenerator):
        failed = False

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
            if not self.failed:
                self.failed = True
                raise PermanentModelError("rejected", code="client_error", status=400)
            return await super().generate(prior, messages, seqs=seqs, pins=pins)

    keys = await make_tenant(own_database)
    generator = FailingFirst()
    worker = ArchiveWorker(own_database, generator, FAST)
    filler = " ".join(f"w{n}" for n in range(1_500))
    async with app_client(own_database) as http:
        agent_session_id = await create_session(http, keys)
        big = [user(f"m{n} {filler}") for n in range(12)]
        await append(http, keys, agent_session_id, big)
        await commit(http, keys, agent_session_id, keep_recent_count=0)
        await drain_all([worker])
        await append(http, keys, agent_session_id, [user("second part")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)
        await drain_all([worker])
        state = await http.get(f"/v1/sessions/{agent_session_id}", headers=keys.read)
    assert state.json()["total_tokens"] > 24_000, "more than one model call's input budget"
    first, second = await archive_rows(own_database, keys.tenant_id)
    assert (first["status"], second["status"]) == ("failed", "done")
    assert second["covers_failed_archives"] == [1]
    [seen] = generator.seen
    assert [content.split(" ", 1)[0] for content in seen] == [f"m{n}" for n in range(12)] + [
        "second"
    ]


async def test_history_pages_by_archive_and_position(
    own_database: Database, app_client: AppFactory
) -> None:
    """A page may end inside an archive; the next one starts at the following section."""
    keys = await make_tenant(own_database)
    async with app_client(own_database) as http:
        agent_session_id = await create_session(http, keys)
        for round_ in range(8):
            await append(http, keys, agent_session_id, [user(f"round {round_}")])
            response = await commit(http, keys, agent_session_id, keep_recent_count=0, wait=True)
            assert response.json()["status"] == "done"
        rows: list[tuple[int, int]] = []
        params: dict[str, int] = {"limit": 3}
        while True:
            page = await http.get(
                f"/v1/sessions/{agent_session_id}/working-memory/history",
                params=params,
                headers=keys.read,
            )
            body = page.json()
            rows += [(item["archive_seq"], item["position"]) for item in body["items"]]
            if body["next_after_archive_seq"] is None:
                break
            params = {
                "limit": 3,
                "after_archive_seq": body["next_after_archive_seq"],
                "after_position": body.get("next_after_position", 7),
            }
    assert rows == [(archive, position) for archive in range(1, 9) for position in range(1, 8)]


async def test_a_cleared_archive_never_runs_again_and_the_next_covers_it(
    own_database: Database, app_client: AppFactory
) -> None:
    keys = await make_tenant(own_database)
    chat = ScriptedChatModel(
        [PermanentModelError("rejected", code="client_error", status=400), created(FIRST_WM)]
    )
    worker = ArchiveWorker(own_database, WorkingMemoryGenerator(chat, fallback="none"), FAST)
    async with app_client(own_database) as http:
        agent_session_id = await create_session(http, keys)
        base = f"/v1/sessions/{agent_session_id}/archives"
        await append(http, keys, agent_session_id, [user("the first secret is 4242")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)
        # Only a failed archive clears: a pending one is refused, and nothing changes.
        pending = await http.post(f"{base}/1:clear", headers=keys.write)
        assert pending.status_code == 409, pending.text
        await drain_all([worker])
        unknown = await http.post(f"{base}/2:clear", headers=keys.write)
        assert unknown.status_code == 404, unknown.text
        reader = await http.post(f"{base}/1:clear", headers=keys.read)
        assert reader.status_code == 403, reader.text
        cleared = await http.post(f"{base}/1:clear", headers=keys.write)
        assert cleared.status_code == 200, cleared.text
        assert cleared.json()["status"] == "cleared"
        twice = await http.post(f"{base}/1:clear", headers=keys.write)
        assert twice.status_code == 409, twice.text
        retried = await http.post(f"{base}/1:retry", headers=keys.write)
        assert retried.status_code == 409, retried.text
        await drain_all([worker])
        [first] = await archive_rows(own_database, keys.tenant_id)
        assert (first["status"], first["attempt"]) == ("cleared", 1)

        await append(http, keys, agent_session_id, [user("second part")])
        await commit(http, keys, agent_session_id, keep_recent_count=0)
        await drain_all([worker])
        first, second = await archive_rows(own_database, keys.tenant_id)
        assert (first["status"], first["attempt"]) == ("cleared", 1)
        assert second["status"] == "done"
        assert second["covers_failed_archives"] == [1]
        assert "the first secret is 4242" in chat.calls[-1].user
