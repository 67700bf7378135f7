"""Reading the file layout (no database): the sample as its files and manifest describe it, the
order and status rules of archives, and every kind of damage reported with path and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.importer.openviking.reader import (
    NotAWorkspace,
    find_sessions,
    read_session,
    workspace_root,
)
from app.importer.openviking.records import (
    OverviewKind,
    OvMessage,
    OvSession,
    ProblemKind,
    keep_window,
    stored_count,
)
from app.models import ArchiveStatus
from app.sessions.schemas import MessageCreate
from tests.importer.expected import read_workspace
from tests.support.openviking import SAMPLE, SESSIONS, copy_sample
from tests.support.workspaces import CORRUPTION, corrupt

LIMIT = 1024 * 1024
V2 = "# Working Memory\n\n" + "\n".join(
    f"## {name}\n- {name} item"
    for name in (
        "Session Title",
        "Current State",
        "Task & Goals",
        "Key Facts & Decisions",
        "Files & Context",
        "Errors & Corrections",
        "Open Issues",
    )
)


def read_all(workspace: Path, **filters: str) -> list[OvSession]:
    refs, _ = find_sessions(workspace, **filters)
    return [read_session(ref, base=workspace, max_message_bytes=LIMIT) for ref in refs]


def message(number: int, role: str = "user", **extra: Any) -> dict[str, Any]:
    return {
        "id": f"msg_{number:032x}",
        "role": role,
        "parts": [{"type": "text", "text": f"message {number}"}],
        "created_at": f"2026-11-29T12:00:{number:02d}Z",
        **extra,
    }


def write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def session_dir(workspace: Path, session_id: str = "s1", user: str = "alice") -> Path:
    path = workspace / "viking" / "acme" / "user" / user / "sessions" / session_id
    path.mkdir(parents=True, exist_ok=True)
    (path / ".meta.json").write_text(json.dumps({"session_id": session_id, "keep_recent_count": 0}))
    return path


def archive_dir(session: Path, name: str, rows: list[dict[str, Any]], **files: str) -> Path:
    path = session / "history" / name
    write_lines(path / "messages.jsonl", rows)
    files.setdefault("_meta_json", "{}")
    for filename, content in files.items():
        (path / ("." + filename[1:].replace("_", "."))).write_text(content)
    return path


def test_the_sample_reads_as_its_files_hold() -> None:
    expected = read_workspace(SAMPLE)
    sessions = read_all(SAMPLE)
    assert [s.ref.session_id for s in sessions] == [s.session_id for s in expected.sessions]
    for session, files in zip(sessions, expected.sessions, strict=True):
        assert session.problems == ()
        assert (session.ref.account, session.ref.user) == (files.account, files.user)
        assert [m.message_id for m in session.messages] == [m["id"] for m in files.messages]
        assert [m.message_id for m in session.live] == [m["id"] for m in files.live]
        assert [(a.name, a.status.value, a.overview.kind.value) for a in session.archives] == [
            (name, status, kind) for name, status, kind, _ in files.archives
        ]
        assert session.tool_parts == len(files.tool_parts)
        tool_messages = [m for line in session.messages for m in line.messages if m.role == "tool"]
        assert len(tool_messages) == len(files.tool_parts)


def test_the_sample_matches_its_manifest() -> None:
    manifest = json.loads((SAMPLE / "manifest.json").read_text())
    sessions = {s.ref.session_id: s for s in read_all(SAMPLE)}
    assert len(sessions) == manifest["summary"]["sessions"]
    for listed in manifest["sessions"]:
        session = sessions[listed["session_id"]]
        assert len(session.live) == listed["live_message_count"]
        assert sum(len(a.messages) for a in session.archives) == listed["archived_message_count"]
        assert session.tool_parts == listed["tool_parts"]
        assert session.keep_recent_count == listed["meta"]["keep_recent_count"]
        assert session.pending_tokens == listed["meta"]["pending_tokens"]
        assert [
            (a.index, a.status.value, len(a.messages), a.overview.kind.value)
            for a in session.archives
        ] == [
            (
                a["index"],
                a["status"],
                a["message_count"],
                "none" if a["overview"] == "absent" else a["overview"],
            )
            for a in listed["archives"]
        ]


def test_an_externalized_tool_output_is_restored_in_full() -> None:
    swe = next(s for s in read_all(SAMPLE) if s.ref.session_id == "swe-marshmallow-1867")
    stored = [m for line in swe.messages for m in line.messages]
    # The layout of the call's parts says which output was externalized; its result holds it.
    externalized = [
        (entry, call.id)
        for m in stored
        if m.metadata
        for entry, call in zip(
            [p for p in m.metadata["openviking"].get("parts", []) if p["type"] == "tool"],
            m.tool_calls or [],
            strict=True,
        )
        if entry.get("tool_output_ref")
    ]
    results = {m.tool_call_id: m.content for m in stored if m.role == "tool"}
    full = SAMPLE / SESSIONS / "swe-marshmallow-1867/tool-results"
    output = next(full.glob("*/output.txt")).read_text(encoding="utf-8")
    assert [results[call_id] for _, call_id in externalized] == [output]
    assert externalized[0][0]["tool_output_restored"] is True


def test_a_failed_archive_keeps_its_stage_and_error() -> None:
    tau = next(s for s in read_all(SAMPLE) if s.ref.session_id == "tau-airline-task0-trial0")
    failed = tau.archives[0]
    recorded = json.loads(
        (
            SAMPLE / SESSIONS / "tau-airline-task0-trial0/history/archive_001/.failed.json"
        ).read_text()
    )
    assert failed.status is ArchiveStatus.FAILED
    assert (failed.error_stage, failed.last_error) == (recorded["stage"], recorded["error"])
    assert failed.retained == 2
    assert failed.keep_recent_count == 2


def test_archives_are_ordered_by_their_number(tmp_path: Path) -> None:
    session = session_dir(tmp_path)
    for number, name in ((1, "archive_010"), (2, "archive_2"), (3, "archive_009")):
        archive_dir(session, name, [message(number)], _done="{}", _overview_md=V2)
    archive_dir(session, "not_an_archive", [message(9)], _done="{}")
    write_lines(session / "messages.jsonl", [])
    (read,) = read_all(tmp_path)
    assert [a.index for a in read.archives] == [2, 9, 10]
    assert [a.messages[0].line for a in read.archives] == [1, 1, 1]
    assert [a.messages[0].message_id for a in read.archives] == [
        message(2)["id"],
        message(3)["id"],
        message(1)["id"],
    ]


STATUS_RULES: list[tuple[str, dict[str, str], ArchiveStatus, OverviewKind, list[ProblemKind]]] = [
    (
        "done with a v2 overview",
        {"_done": "{}", "_overview_md": V2},
        ArchiveStatus.DONE,
        OverviewKind.V2,
        [],
    ),
    (
        "done wins over failed",
        {"_done": "{}", "_failed_json": "{}", "_overview_md": V2},
        ArchiveStatus.DONE,
        OverviewKind.V2,
        [],
    ),
    (
        "done with working memory off",
        {"_done": '{"enable_working_memory": false}'},
        ArchiveStatus.DONE,
        OverviewKind.NONE,
        [],
    ),
    (
        "the older key for it",
        {"_done": '{"working_memory_enabled": false}'},
        ArchiveStatus.DONE,
        OverviewKind.NONE,
        [],
    ),
    (
        "done without the overview it promised",
        {"_done": '{"enable_working_memory": true}'},
        ArchiveStatus.FAILED,
        OverviewKind.NONE,
        [ProblemKind.OVERVIEW_MISSING],
    ),
    (
        "done with an empty overview",
        {"_done": "{}", "_overview_md": "\n"},
        ArchiveStatus.FAILED,
        OverviewKind.NONE,
        [ProblemKind.OVERVIEW_MISSING],
    ),
    (
        "failed",
        {"_failed_json": '{"stage": "archive_read", "error": "boom"}'},
        ArchiveStatus.FAILED,
        OverviewKind.NONE,
        [],
    ),
    (
        "failed, unreadable",
        {"_failed_json": "{oops"},
        ArchiveStatus.FAILED,
        OverviewKind.NONE,
        [ProblemKind.INVALID_JSON],
    ),
    ("neither: still pending", {}, ArchiveStatus.PENDING, OverviewKind.NONE, []),
]


@pytest.mark.parametrize(
    ("files", "status", "kind", "problems"),
    [row[1:] for row in STATUS_RULES],
    ids=[row[0] for row in STATUS_RULES],
)
def test_archive_status_rules(
    tmp_path: Path,
    files: dict[str, str],
    status: ArchiveStatus,
    kind: OverviewKind,
    problems: list[ProblemKind],
) -> None:
    session = session_dir(tmp_path)
    archive_dir(session, "archive_001", [message(1)], **files)
    (read,) = read_all(tmp_path)
    (archive,) = read.archives
    assert (archive.status, archive.overview.kind) == (status, kind)
    assert [p.kind for p in read.problems] == problems
    if status is ArchiveStatus.FAILED and not problems:
        assert (archive.error_stage, archive.last_error) == ("archive_read", "boom")


def test_every_damage_is_reported_where_it_is(tmp_path: Path) -> None:
    workspace = copy_sample(tmp_path / "ws")
    corrupt(workspace)
    sessions = {s.ref.session_id: s for s in read_all(workspace)}
    found = [(p.path, p.line, p.kind) for s in sessions.values() for p in s.problems]
    assert found == CORRUPTION
    expected = read_workspace(SAMPLE).counts
    assert sum(len(s.messages) for s in sessions.values()) == expected["messages"] - 1
    locomo = sessions["locomo-conv26"]
    assert [a.name for a in locomo.archives] == ["archive_001", "archive_002"]
    (kept,) = locomo.live[0].messages
    assert kept.content == (
        "You're doing something amazing! Creating a family for those kids is so lovely. "
        "You'll be an awesome mom! Good luck!"
    )
    assert kept.metadata is not None
    assert kept.metadata["openviking"]["unconverted_parts"] == [
        {"type": "hologram", "uri": "viking://x"}
    ]
    mismatch = next(
        p for p in sessions["swe-marshmallow-1867"].problems if p.kind is ProblemKind.META_MISMATCH
    )
    assert "total_message_count is 29, the files hold 28" in mismatch.detail
    tau = sessions["tau-airline-task0-trial0"]
    assert tau.meta is None
    assert tau.keep_recent_count is None
    assert tau.created_at == tau.messages[0].messages[0].created_at


def test_a_duplicate_id_is_skipped_and_a_nan_kept_as_text(tmp_path: Path) -> None:
    session = session_dir(tmp_path)
    archive_dir(session, "archive_001", [message(1)], _done='{"enable_working_memory": false}')
    (session / "messages.jsonl").write_text(
        json.dumps(message(1)) + "\n" + json.dumps(message(2))[:-1] + ', "score": NaN}\n'
    )
    (read,) = read_all(tmp_path)
    assert [(p.path.rsplit("/", 1)[-1], p.line, p.kind) for p in read.problems] == [
        ("messages.jsonl", 1, ProblemKind.DUPLICATE_MESSAGE)
    ]
    (kept,) = read.live
    assert kept.messages[0].metadata == {
        "openviking": {"message_id": message(2)["id"], "score": "NaN", "parts": [{"type": "text"}]}
    }


def test_a_tool_output_that_does_not_match_its_digest_keeps_the_preview(tmp_path: Path) -> None:
    workspace = copy_sample(tmp_path / "ws")
    swe = workspace / SESSIONS / "swe-marshmallow-1867"
    output = next((swe / "tool-results").glob("*/output.txt"))
    output.write_text("tampered")
    read = next(s for s in read_all(workspace) if s.ref.session_id == "swe-marshmallow-1867")
    (problem,) = read.problems
    assert problem.kind is ProblemKind.TOOL_OUTPUT_MISSING
    assert "does not match its sha256" in problem.detail
    assert problem.line == 7


def test_finding_sessions(tmp_path: Path) -> None:
    workspace = copy_sample(tmp_path / "ws")
    (workspace / SESSIONS / "stray-folder").mkdir()
    (workspace / SESSIONS / ".hidden").mkdir()
    bob = session_dir(workspace, "bob-1", user="bob")
    write_lines(bob / "messages.jsonl", [message(1)])
    refs, problems = find_sessions(workspace)
    assert [r.label for r in refs] == [
        "acme/alice/locomo-conv26",
        "acme/alice/swe-marshmallow-1867",
        "acme/alice/tau-airline-task0-trial0",
        "acme/bob/bob-1",
    ]
    assert [(p.path, p.kind) for p in problems] == [
        ("viking/acme/user/alice/sessions/stray-folder", ProblemKind.NOT_A_SESSION)
    ]
    assert [r.label for r in find_sessions(workspace, user="bob")[0]] == ["acme/bob/bob-1"]
    assert find_sessions(workspace, account="default")[0] == []
    assert workspace_root(workspace / "viking") == workspace / "viking"
    with pytest.raises(NotAWorkspace, match="not an OpenViking workspace"):
        workspace_root(tmp_path)


def test_the_fingerprint_changes_with_any_byte(tmp_path: Path) -> None:
    workspace = copy_sample(tmp_path / "ws")
    before = [s.fingerprint for s in read_all(workspace)]
    assert before == [s.fingerprint for s in read_all(SAMPLE)]
    live = workspace / SESSIONS / "locomo-conv26/messages.jsonl"
    live.write_text(live.read_text() + json.dumps(message(99)) + "\n")
    after = [s.fingerprint for s in read_all(workspace)]
    assert [a == b for a, b in zip(before, after, strict=True)] == [False, True, True]


def ov(*sizes: int) -> list[OvMessage]:
    return [
        OvMessage(
            f"m{n}", n, tuple(MessageCreate(role="user", content="x") for _ in range(size)), 0
        )
        for n, size in enumerate(sizes)
    ]


KEEPS = [
    (0, (1, 2, 3), 0),
    (1, (1, 2, 3), 3),
    (2, (1, 2, 3), 5),
    (3, (1, 2, 3), 6),
    (4, (1, 2, 3), 6),
    (2, (), 0),
]


@pytest.mark.parametrize(("keep", "sizes", "expected"), KEEPS)
def test_keep_window_counts_the_newest_messages_in_workmem_units(
    keep: int, sizes: tuple[int, ...], expected: int
) -> None:
    messages = ov(*sizes)
    assert keep_window(keep, messages) == expected
    assert stored_count(messages) == sum(sizes)


def test_escaped_nuls_in_state_files_are_replaced(tmp_path: Path) -> None:
    session = session_dir(tmp_path)
    (session / ".meta.json").write_text('{"session_id": "s1", "note": "a\\u0000b"}')
    archive_dir(
        session, "archive_001", [message(1)], _failed_json='{"stage": "x", "error": "e\\u0000"}'
    )
    (read,) = read_all(tmp_path)
    assert [(p.path.rsplit("/", 1)[-1], p.kind) for p in read.problems] == [
        (".meta.json", ProblemKind.UNSTORABLE_TEXT),
        (".failed.json", ProblemKind.UNSTORABLE_TEXT),
    ]
    assert read.meta is not None
    assert read.meta["note"] == "a\ufffdb"
    assert read.archives[0].last_error == "e\ufffd"
