"""Working on after an import, through the HTTP API: the imported working memory is served and
is the prior of the next commit, a legacy overview is upgraded, a pending archive is processed,
and tool parts reach the context as whole, valid tool groups."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.db import Database
from app.wm.items import split_items
from app.wm.sections import SECTIONS, parse
from tests.conftest import TenantKeys
from tests.context.helpers import assert_well_formed, get_context, stored_messages
from tests.importer.conftest import run_import
from tests.support.api import append, commit, user
from tests.support.openviking import SAMPLE, SESSIONS, copy_sample

SWE = "swe-marshmallow-1867"
TAU = "tau-airline-task0-trial0"
LOCOMO = "locomo-conv26"


async def agent_session_id(client: httpx.AsyncClient, keys: TenantKeys, external_id: str) -> str:
    listed = await client.get(
        "/v1/sessions", params={"external_id": external_id}, headers=keys.read
    )
    (item,) = listed.json()["items"]
    found: str = item["id"]
    return found


async def imported(
    client: httpx.AsyncClient,
    database: Database,
    keys: TenantKeys,
    workspace: Path,
    external_id: str,
) -> str:
    summary = await run_import(database, workspace, keys.tenant_id)
    assert not summary.failed
    return await agent_session_id(client, keys, external_id)


def overview_sections(path: Path) -> dict[str, str]:
    document = parse(path.read_text())
    return {section.value: document.sections[section] for section in SECTIONS}


async def commit_one_more(
    client: httpx.AsyncClient, keys: TenantKeys, agent_session_id: str
) -> dict[str, Any]:
    await append(client, keys, agent_session_id, [user("Thanks. Please also run the test suite.")])
    response = await commit(client, keys, agent_session_id, keep_recent_count=0, wait=True)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "done", body
    return body


async def test_the_imported_working_memory_is_served(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    tau = await imported(client, database, tenant, SAMPLE, TAU)
    response = await client.get(f"/v1/sessions/{tau}/working-memory", headers=tenant.read)
    body = response.json()
    expected = overview_sections(SAMPLE / SESSIONS / TAU / "history/archive_002/.overview.md")
    assert body["sections"] == expected
    assert body["archive_seq"] == 2
    assert body["is_legacy"] is False
    assert body["generator"] == "import"
    assert {(d["applied"], d["reason"]) for d in body["decisions"]} == {("IMPORT", "imported")}
    state = await client.get(f"/v1/sessions/{tau}", headers=tenant.read)
    assert body["covered_end_seq"] == state.json()["message_count"] == 31


async def test_the_next_commit_starts_from_the_imported_working_memory(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys
) -> None:
    swe = await imported(client, database, tenant, SAMPLE, SWE)
    prior = overview_sections(SAMPLE / SESSIONS / SWE / "history/archive_003/.overview.md")
    body = await commit_one_more(client, tenant, swe)
    assert body["archive"]["archive_seq"] == 4
    assert body["archive"]["upgraded_from_legacy"] is False
    after = body["working_memory"]["sections"]
    for section in ("Files & Context", "Errors & Corrections"):
        carried = split_items(prior[section])
        assert carried, section
        assert set(carried) <= set(split_items(after[section])), section
    assert all(d["applied"] != "IMPORT" for d in body["working_memory"]["decisions"])
    history = await client.get(
        f"/v1/sessions/{swe}/working-memory/history",
        params={"section": "Files & Context", "after_archive_seq": 2},
        headers=tenant.read,
    )
    versions = [(v["archive_seq"], v["op_applied"]) for v in history.json()["items"]]
    assert versions[0] == (3, "IMPORT")
    assert [seq for seq, _ in versions] == [3, 4]


def legacy_is_newest(workspace: Path) -> None:
    """Only the hand-edited free-text archive stays; the later ones' messages are live again,
    as if those two commits had not happened."""
    session = workspace / SESSIONS / SWE
    moved = []
    for name in ("archive_002", "archive_003"):
        moved.append((session / "history" / name / "messages.jsonl").read_text())
        shutil.rmtree(session / "history" / name)
    live = session / "messages.jsonl"
    live.write_text("".join(moved) + live.read_text())
    meta = json.loads((session / ".meta.json").read_text())
    meta.update(message_count=21, commit_count=1)
    (session / ".meta.json").write_text(json.dumps(meta))


async def test_a_legacy_overview_is_upgraded_by_the_next_commit(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys, tmp_path: Path
) -> None:
    workspace = copy_sample(tmp_path / "ws")
    legacy_is_newest(workspace)
    swe = await imported(client, database, tenant, workspace, SWE)
    legacy = (workspace / SESSIONS / SWE / "history/archive_001/.overview.md").read_text()
    served = (await client.get(f"/v1/sessions/{swe}/working-memory", headers=tenant.read)).json()
    assert served["is_legacy"] is True
    assert served["markdown"] == legacy.strip() + "\n"
    assert served["sections"] == {}
    body = await commit_one_more(client, tenant, swe)
    archive = body["archive"]
    assert archive["archive_seq"] == 2
    assert archive["upgraded_from_legacy"] is True
    assert body["working_memory"]["is_legacy"] is False
    facts = body["working_memory"]["sections"]["Key Facts & Decisions"]
    assert 'TimeDelta(precision="milliseconds")' in facts
    listed = (await client.get(f"/v1/sessions/{swe}/archives", headers=tenant.read)).json()
    assert [
        (a["archive_seq"], a["is_legacy"], a["upgraded_from_legacy"]) for a in listed["items"]
    ] == [
        (2, False, True),
        (1, True, False),
    ]


async def test_a_pending_archive_is_processed_before_the_next_commit(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys, tmp_path: Path
) -> None:
    workspace = copy_sample(tmp_path / "ws")
    (workspace / SESSIONS / SWE / "history/archive_003/.done").unlink()
    swe = await imported(client, database, tenant, workspace, SWE)
    served = (await client.get(f"/v1/sessions/{swe}/working-memory", headers=tenant.read)).json()
    assert served["archive_seq"] == 2
    body = await commit_one_more(client, tenant, swe)
    assert body["archive"]["archive_seq"] == 4
    listed = (await client.get(f"/v1/sessions/{swe}/archives", headers=tenant.read)).json()
    assert [(a["archive_seq"], a["status"], a["generator"]) for a in listed["items"]] == [
        (4, "done", "offline"),
        (3, "done", "offline"),
        (2, "done", "import"),
        (1, "done", "import"),
    ]


async def test_an_archive_without_working_memory_leaves_its_messages_raw(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys, tmp_path: Path
) -> None:
    workspace = copy_sample(tmp_path / "ws")
    second = workspace / SESSIONS / LOCOMO / "history/archive_002"
    (second / ".overview.md").unlink()
    (second / ".done").write_text(json.dumps({"enable_working_memory": False}))
    locomo = await imported(client, database, tenant, workspace, LOCOMO)
    served = (await client.get(f"/v1/sessions/{locomo}/working-memory", headers=tenant.read)).json()
    assert served["archive_seq"] == 0
    context = await get_context(client, tenant, locomo, token_budget=128_000)
    assert_well_formed(context)
    assert len(context["messages"]) == 35
    assert context["messages"][0]["content"] == "Hey Mel! Good to see you! How have you been?"


async def test_tool_parts_reach_the_context_as_whole_valid_groups(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys, tmp_path: Path
) -> None:
    workspace = copy_sample(tmp_path / "ws")
    # Without its last done archive, τ-bench's whole run (eight tool parts) is raw history.
    (workspace / SESSIONS / TAU / "history/archive_002/.done").unlink()
    summary = await run_import(database, workspace, tenant.tenant_id)
    assert not summary.failed
    for external_id, tool_parts in ((TAU, 8), (SWE, 2)):
        agent_session = await agent_session_id(client, tenant, external_id)
        stored = await stored_messages(client, tenant, agent_session)
        assert sum(m["role"] == "tool" for m in stored) >= tool_parts
        sizes = set()
        for budget in range(300, 6_000, 150):
            context = await get_context(client, tenant, agent_session, token_budget=budget)
            assert_well_formed(context)
            sizes.add(len(context["messages"]))
        full = await get_context(client, tenant, agent_session, token_budget=128_000)
        assert_well_formed(full)
        sent_results = [m for m in full["messages"] if m["role"] == "tool"]
        assert len(sent_results) == tool_parts
        assert len(sizes) > 3, "the budgets cut the history at many places"


@pytest.mark.parametrize("external_id", [SWE, TAU, LOCOMO])
async def test_expanding_an_imported_archive_returns_its_messages(
    client: httpx.AsyncClient, database: Database, tenant: TenantKeys, external_id: str
) -> None:
    agent_session = await imported(client, database, tenant, SAMPLE, external_id)
    listed = (
        await client.get(f"/v1/sessions/{agent_session}/archives", headers=tenant.read)
    ).json()
    folders = sorted((SAMPLE / SESSIONS / external_id / "history").iterdir())
    for archive, folder in zip(reversed(listed["items"]), folders, strict=True):
        expanded = await client.get(
            f"/v1/sessions/{agent_session}/archives/{archive['archive_seq']}", headers=tenant.read
        )
        ids = [m["metadata"]["openviking"]["message_id"] for m in expanded.json()["messages"]]
        lines = (folder / "messages.jsonl").read_text().split("\n")
        assert list(dict.fromkeys(ids)) == [json.loads(line)["id"] for line in lines if line]
        assert archive["generator_note"] == f"imported from OpenViking history/{folder.name}"
