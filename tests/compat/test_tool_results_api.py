"""OpenViking's tool-result routes against the real ``workmem serve`` process: results written
through OpenViking's own client (``openviking-sdk``), then listed, read by character range and
searched over raw HTTP (the client has no calls for these routes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from openviking_sdk import AsyncHTTPClient, TextPart, ToolPart

from tests.compat.helpers import API, failed, ok
from tests.support.servers import Server

LOG = "".join(
    f"{n:04d} INFO step {n} done 😀\n" if n % 97 else f"{n:04d} ERROR Needle lost at {n}\n"
    for n in range(1, 1001)
)
"""A large tool output: a thousand lines, ten of them errors naming the needle."""
SESSION = "tool-results-e2e"


async def write(base_url: str, key: str) -> None:
    client = AsyncHTTPClient(url=base_url, api_key=key, timeout=30)
    await client.initialize()
    try:
        session = client.session(SESSION)
        await session.add_message(role="user", content="Why did the nightly job fail?")
        await session.add_message(
            role="assistant",
            parts=[
                TextPart(text="Reading the log."),
                ToolPart(
                    tool_id="call_log",
                    tool_name="read_log",
                    tool_input={"path": "/var/log/nightly.log"},
                    tool_output=LOG,
                    tool_status="completed",
                ),
                ToolPart(
                    tool_id="call_df",
                    tool_name="disk_free",
                    tool_input={},
                    tool_output="/ 91% used",
                    tool_status="completed",
                ),
            ],
        )
    finally:
        await client.close()


async def check(http: httpx.AsyncClient) -> None:
    base = f"{API}/sessions/{SESSION}/tool-results"
    listed = ok(await http.get(base))["tool_results"]
    assert [(r["tool_result_id"], r["tool_name"]) for r in listed] == [
        ("call_log", "read_log"),
        ("call_df", "disk_free"),
    ]
    assert listed[0]["original_chars"] == len(LOG)
    assert listed[0]["offset_unit"] == "unicode_code_point"
    assert listed[0]["storage_uri"] == f"viking://session/{SESSION}/tool-results/call_log"
    assert listed[0]["seq"] < listed[1]["seq"]
    only = ok(await http.get(base, params={"tool_name": "disk_free"}))["tool_results"]
    assert [r["tool_result_id"] for r in only] == ["call_df"]
    first = ok(await http.get(base, params={"limit": 1}))["tool_results"]
    assert [r["tool_result_id"] for r in first] == ["call_log"]
    for bad in ({"limit": 0}, {"limit": 1001}):
        failed(await http.get(base, params=bad), "INVALID_ARGUMENT", 400)

    # Read in pages: stepping on by the content's length gives the whole output back.
    offset, pieces = 0, []
    while True:
        page = ok(await http.get(f"{base}/call_log", params={"offset": offset, "limit": 7000}))
        assert page["total_chars"] == len(LOG)
        pieces.append(page["content"])
        offset += len(page["content"])
        if not page["has_more"]:
            break
    assert "".join(pieces) == LOG
    assert len(pieces) == -(-len(LOG) // 7000)
    whole = ok(await http.get(f"{base}/call_log", params={"limit": -1}))
    assert (whole["content"], whole["has_more"]) == (LOG, False)
    assert whole["metadata"]["tool_name"] == "read_log"
    assert whole["metadata"]["redacted"] is False
    bare = ok(await http.get(f"{base}/call_df", params={"include_metadata": "false"}))
    assert (bare["content"], bare["metadata"]) == ("/ 91% used", None)
    past = ok(await http.get(f"{base}/call_df", params={"offset": 10}))
    assert (past["content"], past["has_more"]) == ("", False)
    for bad in ({"limit": -2}, {"offset": -1}, {"limit": 1_000_001}):
        failed(await http.get(f"{base}/call_log", params=bad), "INVALID_ARGUMENT", 400)

    # Search: each error line, its offset and line, a snippet around it.
    found = ok(await http.get(f"{base}/call_log/search", params={"q": "needle LOST"}))
    assert (found["tool_result_id"], found["has_more"]) == ("call_log", False)
    lines = LOG.splitlines()
    assert [m["line"] for m in found["matches"]] == [n for n in range(1, 1001) if n % 97 == 0]
    for match in found["matches"]:
        assert LOG[match["offset"] :].startswith("Needle lost")
        assert "Needle lost" in match["snippet"]
        assert lines[match["line"] - 1] in LOG[match["snippet_offset"] :][:700]
    two = ok(await http.get(f"{base}/call_log/search", params={"q": "needle", "limit": 2}))
    assert (len(two["matches"]), two["has_more"]) == (2, True)
    tight = ok(
        await http.get(f"{base}/call_log/search", params={"q": "needle", "context_chars": 0})
    )
    assert {m["snippet"] for m in tight["matches"]} == {"Needle"}
    documented = ok(
        await http.get(
            f"{base}/call_log/search", params={"q": "needle", "limit": 1, "context_chars": 8}
        )
    )
    assert documented["matches"] == [  # the example of docs/openviking-api.md
        {
            "offset": 2402,
            "offset_unit": "unicode_code_point",
            "line": 97,
            "snippet": "7 ERROR Needle lost at",
            "snippet_offset": 2394,
        }
    ]
    failed(await http.get(f"{base}/call_log/search"), "INVALID_ARGUMENT", 400)
    failed(await http.get(f"{base}/call_log/search", params={"q": ""}), "INVALID_ARGUMENT", 400)

    # Unknown ids: OpenViking's NOT_FOUND, saying what was looked for.
    for path in (f"{base}/call_nope", f"{base}/call_nope/search?q=x"):
        error = failed(await http.get(path), "NOT_FOUND", 404)
        assert error["details"] == {"resource": "call_nope", "type": "tool result"}
    for path in ("", "/call_log", "/call_log/search?q=x"):
        error = failed(
            await http.get(f"{API}/sessions/no-such-session/tool-results{path}"), "NOT_FOUND", 404
        )
        assert error["details"] == {"resource": "no-such-session", "type": "session"}


@pytest.mark.e2e
async def test_tool_results_listed_read_and_searched_through_workmem_serve(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path / "home")
    try:
        await asyncio.to_thread(server.wait_ready)
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        await write(server.base_url, key)
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) as http:
            await check(http)
    finally:
        log = await asyncio.to_thread(server.stop)
    assert '"level": "error"' not in log
