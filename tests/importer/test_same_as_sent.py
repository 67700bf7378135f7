"""One OpenViking format: every message of the sample workspace, imported, is stored exactly as
the same message sent through ``/api/v1`` is, and reads back through ``/api/v1`` as its parts."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import text

from app.db import Database
from tests.compat.helpers import API, ok
from tests.conftest import TenantKeys, make_tenant
from tests.importer.conftest import run_import
from tests.importer.expected import read_workspace
from tests.support.openviking import SAMPLE

_MESSAGES = text(
    """
    SELECT s.external_id, m.seq, m.role, m.turn, m.message, m.token_count, m.content_text,
           m.metadata, m.created_at
    FROM messages m JOIN agent_sessions s USING (tenant_id, agent_session_id)
    ORDER BY s.external_id, m.seq
    """
)


async def stored(database: Database, keys: TenantKeys) -> list[tuple[Any, ...]]:
    async with database.tenant(keys.tenant_id) as db:
        return [tuple(row) for row in (await db.execute(_MESSAGES)).all()]


def restored_externally(line: dict[str, Any]) -> bool:
    """A line whose tool output was cut short on disk: the importer restores it from its file,
    which a client of the API never had to do (it sends the output it has)."""
    return any(part.get("tool_output_ref") for part in line["parts"])


async def test_an_imported_message_is_stored_as_the_same_message_sent(
    database: Database, client: httpx.AsyncClient
) -> None:
    files = read_workspace(SAMPLE)
    imported = await make_tenant(database, "imported")
    sent = await make_tenant(database, "sent")
    await run_import(database, SAMPLE, imported.tenant_id)
    set_aside: set[str] = set()
    for session in files.sessions:
        # Archived messages first, then the live ones: the order the importer appends them in.
        for line in session.messages:
            if restored_externally(line):
                set_aside.add(line["id"])
            ok(
                await client.post(
                    f"{API}/sessions/{session.session_id}/messages",
                    json=line,
                    headers=sent.write,
                )
            )
    from_import, from_api = await stored(database, imported), await stored(database, sent)
    assert len(from_import) == len(from_api) == 109
    compared = 0
    for row_imported, row_sent in zip(from_import, from_api, strict=True):
        assert row_imported[:2] == row_sent[:2]  # the same session and seq
        if row_imported[7]["openviking"]["message_id"] in set_aside:
            continue
        assert row_imported == row_sent
        compared += 1
    assert len(set_aside) == 1
    assert compared == 107
    tool_calls = [row for row in from_api if row[2] == "tool"]
    assert len({(row[0], row[4]["tool_call_id"]) for row in tool_calls}) == len(tool_calls)


def as_read(part: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """A part of a line as it should read back: a tool part without output has an empty one,
    and an externalized output is the file's, restored."""
    if part["type"] != "tool":
        return part
    read = {"tool_output": "", **part}
    if part.get("tool_output_ref"):
        read["tool_output"] = given["tool_output"]
    return read


async def test_an_imported_message_reads_back_as_its_parts(
    database: Database, client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    files = read_workspace(SAMPLE)
    await run_import(database, SAMPLE, tenant.tenant_id)
    read_back = 0
    for session in files.sessions:
        for name, status, _, lines in session.archives:
            if status != "done":
                continue
            archive = ok(
                await client.get(
                    f"{API}/sessions/{session.session_id}/archives/{name}", headers=tenant.read
                )
            )
            messages = archive["messages"]
            assert len(messages) == len(lines), (session.session_id, name)
            for message, line in zip(messages, lines, strict=True):
                assert message["role"] == line["role"]
                assert message["created_at"] == line["created_at"].replace("Z", "+00:00") or (
                    message["created_at"].startswith(line["created_at"][:19])
                )
                for key in ("peer_id", "turn_id", "message_kind"):
                    assert message.get(key) == line.get(key)
                assert [
                    {k: v for k, v in part.items() if k != "tool_output_restored"}
                    for part in message["parts"]
                ] == [
                    as_read(part, given)
                    for part, given in zip(line["parts"], message["parts"], strict=True)
                ]
                read_back += 1
    assert read_back > 50
