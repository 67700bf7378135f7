"""OpenViking's own Python client (``openviking-sdk``) against workmem, changing only the base URL
and the key: in process (a loopback server in the test's event loop) and against the real
``workmem serve`` process. Every call it makes succeeds and returns what it documents."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from openviking_sdk import AsyncHTTPClient, SyncHTTPClient, TextPart, ToolPart
from openviking_sdk.errors import (
    ConflictError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
)

from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.conftest import make_tenant
from tests.support.servers import Server, free_port

SEARCH = ToolPart(
    tool_id="call_HGn16KZh9oNCruxsMJ4gYXan",
    tool_name="search_direct_flight",
    tool_input={"origin": "JFK", "destination": "SEA", "date": "2024-05-20"},
    tool_output='[{"flight_number": "HAT069", "status": "available"}]',
    tool_status="completed",
    duration_ms=182.0,
)
SEARCH_AS_SENT = {
    "type": "tool",
    "tool_id": SEARCH.tool_id,
    "tool_name": SEARCH.tool_name,
    "tool_uri": "",
    "skill_uri": "",
    "tool_input": SEARCH.tool_input,
    "tool_output": SEARCH.tool_output,
    "tool_status": "completed",
    "duration_ms": 182.0,
}


async def completed(client: AsyncHTTPClient, task_id: str, timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        task = await client.get_task(task_id)
        if task["status"] in ("completed", "failed") or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.1)


async def drive(base_url: str, key: str, session_id: str) -> None:
    """OpenViking's documented session flow, through its client, asserting what it documents."""
    client = AsyncHTTPClient(url=base_url, api_key=key, timeout=30)
    await client.initialize()
    try:
        assert await client.health() is True
        created = await client.create_session(session_id=session_id)
        assert created["session_id"] == session_id
        with pytest.raises(ConflictError):
            await client.create_session(session_id=session_id)

        session = client.session(session_id)
        added = await session.add_message(
            role="user", content="Book me a flight from New York to Seattle on May 20th."
        )
        assert added == {
            "session_id": session_id,
            "message_count": 1,
            "pending_tokens": added["pending_tokens"],
        }
        await session.add_message(
            role="assistant", parts=[TextPart(text="Searching direct flights."), SEARCH]
        )
        batch = await session.batch_add_messages(
            [
                {"role": "assistant", "content": "HAT069 is available at 08:00."},
                {"role": "user", "parts": [{"type": "text", "text": "Book it, window seat."}]},
            ]
        )
        assert (batch["added"], batch["message_count"]) == (2, 5)

        info = await client.get_session(session_id)
        assert (info["message_count"], info["commit_count"]) == (5, 0)
        assert info["pending_tokens"] > 0
        assert await client.session_exists(session_id)
        assert session_id in [item["session_id"] for item in await client.list_sessions()]

        commit = await session.commit(keep_recent_count=1)
        assert (commit["status"], commit["archived"]) == ("accepted", True)
        assert commit["archive_uri"].endswith("/history/archive_001")
        task = await completed(client, commit["task_id"])
        assert task["status"] == "completed", task
        assert task["result"]["archive_uri"] == commit["archive_uri"]
        assert sum(task["result"]["memories_extracted"].values()) == 0

        context = await session.get_session_context(token_budget=8000)
        overview = context["latest_archive_overview"]
        assert overview.startswith("# Working Memory")
        assert "Seattle" in overview
        assert [m["parts"] for m in context["messages"]] == [
            [{"type": "text", "text": "Book it, window seat."}]
        ]
        assert context["estimatedTokens"] == (
            context["stats"]["activeTokens"] + context["stats"]["archiveTokens"]
        )
        assert context["stats"]["totalArchives"] == 1

        archive = await session.get_archive("archive_001")
        assert archive["archive_id"] == "archive_001"
        assert archive["overview"] == overview
        assert archive["messages"][1]["parts"] == [
            {"type": "text", "text": "Searching direct flights."},
            SEARCH_AS_SENT,
        ]
        with pytest.raises(NotFoundError):
            await session.get_archive("archive_002")

        after = await client.get_session(session_id)
        assert (after["message_count"], after["total_message_count"], after["commit_count"]) == (
            1,
            5,
            1,
        )
        skipped = await session.commit(keep_recent_count=5)
        assert (skipped["status"], skipped["task_id"]) == ("skipped", None)
        with pytest.raises(InvalidArgumentError):
            await session.commit(keep_recent_count=10_001)

        # Messages auto-create their session; reading can too.
        await client.session(f"{session_id}-auto").add_message(role="user", content="hello")
        assert (await client.get_session(f"{session_id}-auto"))["message_count"] == 1
        made = await client.get_session(f"{session_id}-made", auto_create=True)
        assert made["message_count"] == 0

        with pytest.raises(NotFoundError):
            await client.get_session("nobody-here")
        with pytest.raises(InvalidArgumentError):
            await client.get_session("a/b")
        assert await client.get_task("no-such-task") is None

        await session.delete()
        assert not await client.session_exists(session_id)
        assert await client.get_task(commit["task_id"]) is None
    finally:
        await client.close()

    stranger = AsyncHTTPClient(url=base_url, api_key="wm_abcdefgh_" + "a" * 40)
    await stranger.initialize()
    try:
        with pytest.raises(UnauthenticatedError):
            await stranger.list_sessions()
    finally:
        await stranger.close()


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """The app on a loopback port, served by uvicorn in this event loop."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None))
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + 30
    while not server.started:
        assert not task.done(), "uvicorn stopped before it started"
        assert time.monotonic() < deadline, "uvicorn did not start"
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def test_the_sdk_in_process(own_database: Database, settings: Settings) -> None:
    keys = await make_tenant(own_database)
    app = create_app(
        settings.model_copy(update={"worker_enabled": True, "worker_poll_s": 0.05}),
        database=own_database,
    )
    async with serving(app) as base_url:
        await drive(base_url, keys.writer, "sdk-in-process")
        reader = AsyncHTTPClient(url=base_url, api_key=keys.reader)
        await reader.initialize()
        try:
            with pytest.raises(PermissionDeniedError):
                await reader.session("sdk-read-only").add_message(role="user", content="x")
        finally:
            await reader.close()


@pytest.mark.e2e
async def test_the_sdk_against_workmem_serve(tmp_path: Path) -> None:
    server = Server(tmp_path / "home")
    try:
        await asyncio.to_thread(server.wait_ready)
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        await drive(server.base_url, key, "sdk-e2e")
        # The synchronous client runs the same calls on a loop of its own.
        sync = SyncHTTPClient(url=server.base_url, api_key=key)
        sync.initialize()
        try:
            sync.session("sdk-sync").add_message(role="user", content="from the sync client")
            context = sync.get_session_context("sdk-sync", token_budget=4000)
            assert context["messages"][0]["parts"] == [
                {"type": "text", "text": "from the sync client"}
            ]
            sync.delete_session("sdk-sync")
        finally:
            sync.close()
    finally:
        log = await asyncio.to_thread(server.stop)
    assert '"level": "error"' not in log
