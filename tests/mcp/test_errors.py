"""Every failure of a ``workmem-mcp`` tool reaches the model as ``workmem <problem type>:
<detail>`` and is one line on the server's stderr, never a traceback: a wrong key, a workmem
that cannot be reached, a session that does not exist yet, an archive that does not exist.
Driven by the MCP SDK's own stdio client against the real ``workmem serve``."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.types import CallToolResult

from tests.mcp.helpers import mcp_session, structured, text_of
from tests.support.servers import free_port

pytestmark = pytest.mark.e2e


def stderr_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


def problem(result: CallToolResult, tool: str) -> str:
    """The problem a failed call reports, after the SDK's ``Error executing tool <name>: ``."""
    assert result.is_error
    text = text_of(result)
    prefix = f"Error executing tool {tool}: "
    assert text.startswith(prefix), text
    assert "\n" not in text
    return text.removeprefix(prefix)


async def test_a_wrong_key_is_one_line_for_the_model_and_on_stderr(
    served: tuple[str, str], tmp_path: Path
) -> None:
    url, _ = served
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        async with mcp_session(url, "wm_not_a_key", errlog=errlog) as session:
            by_name = await session.call_tool("get_context", {"session": "by-external-id"})
            by_id = await session.call_tool(
                "get_context", {"session": "00000000-0000-4000-8000-000000000000"}
            )
            appended = await session.call_tool(
                "append_messages",
                {"session": "by-external-id", "messages": [{"role": "user", "content": "x"}]},
            )
    calls = [("get_context", by_name), ("get_context", by_id), ("append_messages", appended)]
    for tool, result in calls:
        assert problem(result, tool) == (
            "workmem unauthenticated: the API key is unknown, malformed or revoked "
            "(check WORKMEM_API_KEY)"
        )
    assert stderr_lines(log) == [
        f"workmem mcp: {tool} failed: {problem(result, tool)}" for tool, result in calls
    ]


async def test_an_unreachable_workmem(tmp_path: Path) -> None:
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        async with mcp_session(f"http://127.0.0.1:{free_port()}", "wm_x", errlog=errlog) as session:
            failed = await session.call_tool("search_memories", {"query": "seats"})
            resource = None
            try:
                await session.read_resource("workmem://sessions/s1/working-memory")
            except Exception as error:  # the SDK raises the resource error it was sent
                resource = str(error)
    reported = problem(failed, "search_memories")
    assert reported.startswith("workmem connection_error: ConnectError: ")
    assert reported.endswith("(is WORKMEM_URL the address of a running workmem?)")
    assert resource is not None
    assert "workmem connection_error: ConnectError: " in resource
    lines = stderr_lines(log)
    assert lines[0] == f"workmem mcp: search_memories failed: {reported}"
    assert lines[1].startswith("workmem mcp: reading s1 failed: workmem connection_error: ")
    assert len(lines) == 2


async def test_faults_of_the_call_and_problems_of_workmem(
    served: tuple[str, str], tmp_path: Path
) -> None:
    url, key = served
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        async with mcp_session(url, key, errlog=errlog) as session:
            missing = await session.call_tool("get_context", {"session": "never-made"})
            unnamed = await session.call_tool("commit", {})
            structured(
                await session.call_tool(
                    "append_messages",
                    {"session": "errors", "messages": [{"role": "user", "content": "hi"}]},
                )
            )
            no_archive = await session.call_tool(
                "read_archive", {"session": "errors", "archive_seq": 9}
            )
            refused = await session.call_tool(
                "append_messages",
                {"session": "errors", "messages": [{"role": "tool", "content": "no call id"}]},
            )
    assert problem(missing, "get_context") == (
        "workmem bad_request: no agent session 'never-made' yet: append_messages creates it"
    )
    assert problem(unnamed, "commit") == (
        "workmem bad_request: name the agent session: pass 'session', or set WORKMEM_SESSION"
    )
    assert problem(no_archive, "read_archive").startswith(
        "workmem not_found: archive 9 of agent session"
    )
    assert problem(refused, "append_messages").startswith("workmem validation_error: ")
    calls = [
        ("get_context", missing),
        ("commit", unnamed),
        ("read_archive", no_archive),
        ("append_messages", refused),
    ]
    assert stderr_lines(log) == [
        f"workmem mcp: {tool} failed: {problem(result, tool)}" for tool, result in calls
    ]
