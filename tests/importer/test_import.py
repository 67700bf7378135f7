"""Importing into a real database: what the files hold arrives, counted independently; re-runs
add nothing; changed, taken, damaged and oversized sessions are reported; a dry run writes
nothing."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from app.db import Database
from app.errors import NotFound
from app.importer.openviking.records import ProblemKind
from app.importer.openviking.summary import SessionStatus
from app.sessions.schemas import AgentSessionCreate
from app.sessions.service import AgentSessionService, Limits
from tests.conftest import TenantKeys, make_tenant
from tests.importer.conftest import row_counts, run_import, snapshot
from tests.importer.expected import read_workspace
from tests.support.openviking import SAMPLE, SESSIONS, copy_sample
from tests.support.workspaces import CORRUPTION, corrupt


async def rows(database: Database, keys: TenantKeys, query: str) -> list[Any]:
    async with database.tenant(keys.tenant_id) as db:
        return list((await db.execute(text(query))).all())


async def test_the_sample_imports_what_its_files_hold(
    database: Database, tenant: TenantKeys
) -> None:
    files = read_workspace(SAMPLE)
    counts = files.counts
    manifest = json.loads((SAMPLE / "manifest.json").read_text())["summary"]
    summary = await run_import(database, SAMPLE, tenant.tenant_id)
    figures = summary.figures()

    assert figures["agent_sessions"]["imported"] == counts["agent_sessions"] == manifest["sessions"]
    assert figures["messages"]["openviking"] == counts["messages"]
    assert counts["live_messages"] == manifest["live_messages"]
    assert counts["archived_messages"] == manifest["archived_messages"]
    assert (
        figures["archives"]
        == counts["archives"]
        == {
            "done": manifest["archives_done"],
            "failed": manifest["archives_failed"],
            "pending": manifest["archives_pending"],
        }
    )
    assert (
        figures["working_memory"]
        == counts["working_memory"]
        == {
            "v2": manifest["overviews_v2"],
            "legacy": manifest["overviews_legacy"],
            "none": manifest["overviews_absent"],
        }
    )
    assert figures["tool_parts"] == counts["tool_parts"] == manifest["tool_parts"]
    assert summary.problems == []

    sessions = await rows(
        database, tenant, "SELECT external_id, user_id, last_seq FROM agent_sessions ORDER BY 1"
    )
    assert [(r.external_id, r.user_id) for r in sessions] == [
        (s.session_id, s.user) for s in files.sessions
    ]
    assert sum(r.last_seq for r in sessions) == figures["messages"]["stored"]

    # Every OpenViking message arrived once, in order, with its own time; each tool part is one
    # call and one result.
    stored = await rows(
        database,
        tenant,
        "SELECT s.external_id, m.seq, m.role, m.message, m.metadata, m.created_at"
        " FROM messages m JOIN agent_sessions s USING (tenant_id, agent_session_id)"
        " ORDER BY s.external_id, m.seq",
    )
    for session in files.sessions:
        own = [r for r in stored if r.external_id == session.session_id]
        ids = list(dict.fromkeys(r.metadata["openviking"]["message_id"] for r in own))
        assert ids == [m["id"] for m in session.messages]
        assert sum(r.role == "tool" for r in own) == len(session.tool_parts)
        calls = [c for r in own for c in r.message.get("tool_calls") or []]
        assert len(calls) == len(session.tool_parts)
        first_times: dict[str, datetime] = {}
        for r in own:
            first_times.setdefault(r.metadata["openviking"]["message_id"], r.created_at)
        assert [t.isoformat() for t in first_times.values()] == [
            _utc_iso(m["created_at"]) for m in session.messages
        ]
        statuses = Counter(
            entry.get("tool_status")
            for r in own
            for entry in r.metadata["openviking"].get("parts", [])
            if entry["type"] == "tool"
        )
        assert statuses == Counter(p["tool_status"] for p in session.tool_parts)

    # One archive per folder, over exactly the messages of that folder.
    archives = await rows(
        database,
        tenant,
        "SELECT s.external_id, a.archive_seq, a.start_seq, a.end_seq, a.status, a.error_stage,"
        " a.last_error, a.is_legacy, a.legacy_overview, a.generator"
        " FROM archives a JOIN agent_sessions s USING (tenant_id, agent_session_id)"
        " ORDER BY 1, 2",
    )
    for session in files.sessions:
        own = [a for a in archives if a.external_id == session.session_id]
        assert [(a.archive_seq, a.status) for a in own] == [
            (n, status) for n, (_, status, _, _) in enumerate(session.archives, start=1)
        ]
        for archive, (name, _, kind, messages) in zip(own, session.archives, strict=True):
            inside = [r for r in stored if r.external_id == session.session_id]
            inside = [r for r in inside if archive.start_seq <= r.seq <= archive.end_seq]
            assert list(dict.fromkeys(r.metadata["openviking"]["message_id"] for r in inside)) == [
                m["id"] for m in messages
            ]
            folder = SAMPLE / SESSIONS / session.session_id / "history" / name
            assert archive.is_legacy is (kind == "legacy")
            if kind == "legacy":
                assert (
                    archive.legacy_overview == (folder / ".overview.md").read_text().strip() + "\n"
                )
            if archive.status == "failed":
                failed = json.loads((folder / ".failed.json").read_text())
                assert (archive.error_stage, archive.last_error) == (
                    failed["stage"],
                    failed["error"],
                )

    sections = await rows(
        database,
        tenant,
        "SELECT op_applied, reason, generator, count(*) FROM wm_section_versions GROUP BY 1, 2, 3",
    )
    assert [tuple(r) for r in sections] == [
        ("IMPORT", "imported", "import", 7 * counts["working_memory"]["v2"])
    ]


def _utc_iso(value: str) -> str:
    return datetime.fromisoformat(value).astimezone(UTC).isoformat()


async def test_counters_are_those_of_the_append_path(
    database: Database, tenant: TenantKeys
) -> None:
    await run_import(database, SAMPLE, tenant.tenant_id)
    manifest = {
        s["session_id"]: s for s in json.loads((SAMPLE / "manifest.json").read_text())["sessions"]
    }
    found = await rows(
        database,
        tenant,
        "SELECT agent_session_id, external_id, keep_recent_count, pending_tokens, last_seq,"
        " archived_upto_seq, archive_count FROM agent_sessions ORDER BY external_id",
    )
    async with database.tenant(tenant.tenant_id) as db:
        service = AgentSessionService(db, tenant.principal())
        for row in found:
            agent_session = await service.get(row.agent_session_id)
            assert await service.recompute_pending(agent_session) == row.pending_tokens == 0
            listed = manifest[row.external_id]
            assert row.archive_count == len(listed["archives"])
            # OpenViking's window of k messages is k workmem messages plus one per tool part.
            live_tool_parts = listed["tool_parts_live"]
            assert row.keep_recent_count == listed["meta"]["keep_recent_count"] + live_tool_parts
            assert row.last_seq - row.archived_upto_seq == row.keep_recent_count


async def test_a_second_run_adds_nothing_and_says_so(
    database: Database, tenant: TenantKeys
) -> None:
    await run_import(database, SAMPLE, tenant.tenant_id)
    before = await snapshot(database, tenant.tenant_id)
    again = await run_import(database, SAMPLE, tenant.tenant_id)
    assert await snapshot(database, tenant.tenant_id) == before
    assert {o.status for o in again.outcomes} == {SessionStatus.ALREADY_IMPORTED}
    figures = again.figures()
    assert figures["agent_sessions"]["imported"] == 0
    assert figures["agent_sessions"]["already_imported"] == 3
    assert figures["messages"] == {"openviking": 0, "stored": 0}


async def test_a_session_changed_since_its_import_is_reported_and_left_alone(
    database: Database, tenant: TenantKeys, tmp_path: Path
) -> None:
    workspace = copy_sample(tmp_path / "ws")
    await run_import(database, workspace, tenant.tenant_id)
    before = await snapshot(database, tenant.tenant_id)
    live = workspace / SESSIONS / "locomo-conv26/messages.jsonl"
    newer = {
        "id": "msg_" + "f" * 32,
        "role": "user",
        "parts": [{"type": "text", "text": "Hi again"}],
        "created_at": "2023-05-25T13:31:00Z",
    }
    live.write_text(live.read_text() + json.dumps(newer) + "\n")
    again = await run_import(database, workspace, tenant.tenant_id)
    assert await snapshot(database, tenant.tenant_id) == before
    assert [(o.session.ref.session_id, o.status) for o in again.outcomes] == [
        ("locomo-conv26", SessionStatus.CHANGED_SINCE_IMPORT),
        ("swe-marshmallow-1867", SessionStatus.ALREADY_IMPORTED),
        ("tau-airline-task0-trial0", SessionStatus.ALREADY_IMPORTED),
    ]
    (problem,) = again.problems
    assert problem.kind is ProblemKind.CHANGED_SINCE_IMPORT
    assert problem.path == "viking/acme/user/alice/sessions/locomo-conv26"


async def test_an_external_id_taken_by_another_agent_session_is_not_imported_over(
    database: Database, tenant: TenantKeys
) -> None:
    async with database.tenant(tenant.tenant_id) as db:
        own = await AgentSessionService(db, tenant.principal()).create(
            AgentSessionCreate(external_id="swe-marshmallow-1867")
        )
    summary = await run_import(database, SAMPLE, tenant.tenant_id)
    assert [o.status for o in summary.outcomes] == [
        SessionStatus.IMPORTED,
        SessionStatus.EXTERNAL_ID_TAKEN,
        SessionStatus.IMPORTED,
    ]
    (problem,) = summary.problems
    assert problem.kind is ProblemKind.EXTERNAL_ID_TAKEN
    assert str(own.agent_session_id) in problem.detail
    untouched = await rows(
        database,
        tenant,
        "SELECT last_seq FROM agent_sessions WHERE external_id = 'swe-marshmallow-1867'",
    )
    assert [r.last_seq for r in untouched] == [0]


async def test_a_dry_run_writes_nothing_and_reports_the_same(
    database: Database, admin_database: Database, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    before = await row_counts(admin_database)
    dry = await run_import(database, SAMPLE, tenant.tenant_id, dry_run=True)
    assert await row_counts(admin_database) == before
    assert {o.status for o in dry.outcomes} == {SessionStatus.WOULD_IMPORT}
    real = await run_import(database, SAMPLE, other_tenant.tenant_id)
    assert dry.figures() == real.figures()
    assert dry.dry_run
    assert not real.dry_run


async def test_a_damaged_copy_imports_the_rest_and_reports_each_problem(
    database: Database, tenant: TenantKeys, tmp_path: Path
) -> None:
    workspace = copy_sample(tmp_path / "ws")
    corrupt(workspace)
    summary = await run_import(database, workspace, tenant.tenant_id)
    assert [(p.path, p.line, p.kind) for p in summary.problems] == CORRUPTION
    assert {o.status for o in summary.outcomes} == {SessionStatus.IMPORTED}
    counts = read_workspace(SAMPLE).counts
    assert summary.figures()["messages"]["openviking"] == counts["messages"] - 1
    archives = await rows(
        database,
        tenant,
        "SELECT s.external_id, count(*) AS n FROM archives a"
        " JOIN agent_sessions s USING (tenant_id, agent_session_id) GROUP BY 1 ORDER BY 1",
    )
    assert [(r.external_id, r.n) for r in archives] == [
        ("locomo-conv26", 2),
        ("swe-marshmallow-1867", 3),
        ("tau-airline-task0-trial0", 2),
    ]
    # Without its .meta.json, tau's counters are recomputed from the files.
    tau = await rows(
        database,
        tenant,
        "SELECT keep_recent_count, pending_tokens FROM agent_sessions"
        " WHERE external_id = 'tau-airline-task0-trial0'",
    )
    assert [tuple(r) for r in tau] == [(0, 0)]


async def test_a_session_with_a_message_above_the_limit_waits_for_a_higher_one(
    database: Database, tenant: TenantKeys
) -> None:
    tight = Limits(max_message_bytes=4096)
    first = await run_import(database, SAMPLE, tenant.tenant_id, limits=tight)
    assert [o.status for o in first.outcomes] == [
        SessionStatus.IMPORTED,
        SessionStatus.FAILED,
        SessionStatus.IMPORTED,
    ]
    assert first.failed
    kinds = {p.kind for p in first.problems}
    assert kinds == {ProblemKind.MESSAGE_TOO_LARGE}
    assert all(
        p.path.startswith("viking/acme/user/alice/sessions/swe-marshmallow-1867/")
        for p in first.problems
    )
    second = await run_import(database, SAMPLE, tenant.tenant_id)
    assert [o.status for o in second.outcomes] == [
        SessionStatus.ALREADY_IMPORTED,
        SessionStatus.IMPORTED,
        SessionStatus.ALREADY_IMPORTED,
    ]


PENDING = [
    # (keep in .meta.json, its pending_tokens, live messages outside the window, reported)
    ("nothing pending, as recorded", 3, 0, False, False),
    ("two outside the window, as recorded", 1, 57, True, False),
    ("nothing pending, though it said so", 3, 40, False, True),
    ("two outside the window, though it said none", 1, 0, True, True),
]


@pytest.mark.parametrize(
    ("keep", "said", "pending", "reported"),
    [row[1:] for row in PENDING],
    ids=[r[0] for r in PENDING],
)
async def test_pending_tokens_are_recomputed_and_checked(
    database: Database, tmp_path: Path, keep: int, said: int, pending: bool, reported: bool
) -> None:
    keys = await make_tenant(database)
    workspace = copy_sample(tmp_path / "ws")
    meta_path = workspace / SESSIONS / "locomo-conv26/.meta.json"
    meta = json.loads(meta_path.read_text())
    meta.update(keep_recent_count=keep, pending_tokens=said)
    meta_path.write_text(json.dumps(meta))
    summary = await run_import(database, workspace, keys.tenant_id, account="acme", user="alice")
    locomo = summary.outcomes[0]
    assert locomo.session.ref.session_id == "locomo-conv26"
    assert (locomo.pending_tokens or 0) > 0 if pending else locomo.pending_tokens == 0
    found = [p for p in summary.problems if p.kind is ProblemKind.PENDING_TOKENS_MISMATCH]
    assert bool(found) is reported
    async with database.tenant(keys.tenant_id) as db:
        service = AgentSessionService(db, keys.principal())
        agent_session = await service.get(locomo.agent_session_id)  # type: ignore[arg-type]
        assert await service.recompute_pending(agent_session) == agent_session.pending_tokens
        assert agent_session.keep_recent_count == keep


async def test_an_unknown_tenant_is_refused_before_anything_is_read(database: Database) -> None:
    with pytest.raises(NotFound, match="does not exist"):
        await run_import(database, SAMPLE, uuid.uuid4())


async def test_an_empty_session_becomes_an_empty_agent_session(
    database: Database, tenant: TenantKeys, tmp_path: Path
) -> None:
    workspace = copy_sample(tmp_path / "ws")
    empty = workspace / "viking/acme/user/bob/sessions/20261129-125310-1330dbd278204ef8"
    empty.mkdir(parents=True)
    (empty / "messages.jsonl").write_text("")
    (empty / ".meta.json").write_text(
        json.dumps(
            {
                "session_id": empty.name,
                "message_count": 0,
                "keep_recent_count": 0,
                "created_by_account_id": "acme",
                "created_by_user_id": "bob",
            }
        )
    )
    summary = await run_import(database, workspace, tenant.tenant_id, user="bob")
    assert [o.status for o in summary.outcomes] == [SessionStatus.IMPORTED]
    assert summary.problems == []
    found = await rows(
        database, tenant, "SELECT external_id, user_id, last_seq, archive_count FROM agent_sessions"
    )
    assert [tuple(r) for r in found] == [(empty.name, "bob", 0, 0)]
