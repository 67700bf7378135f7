"""A page of a tool result's text and the matches of a search inside it: tables of cases at,
below and above each bound (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.compat.openviking.tool_results import page, search, select
from app.sessions.records import ToolResult

WHEN = datetime(2026, 1, 2, tzinfo=UTC)


def result(text: str, call_id: str = "call_1", tool: str = "read_log") -> ToolResult:
    return ToolResult(call_id, tool, 3, text, WHEN, redacted=False, retracted=False)


@pytest.mark.parametrize(
    ("text", "offset", "limit", "content", "has_more"),
    [
        ("abcdef", 0, 3, "abc", True),
        ("abcdef", 3, 3, "def", False),  # the last page ends exactly at the end
        ("abcdef", 3, 4, "def", False),  # above the end: what is left
        ("abcdef", 2, 3, "cde", True),
        ("abcdef", 0, 0, "", True),
        ("abcdef", 0, -1, "abcdef", False),
        ("abcdef", 4, -1, "ef", False),
        ("abcdef", 5, 1, "f", False),  # the last character
        ("abcdef", 6, 1, "", False),  # at the end
        ("abcdef", 7, 1, "", False),  # past the end
        ("", 0, 10, "", False),
        ("a😀b", 1, 1, "😀", True),  # offsets count code points, not bytes
    ],
)
def test_a_page_is_the_characters_from_offset(
    text: str, offset: int, limit: int, content: str, has_more: bool
) -> None:
    read = page(result(text), offset=offset, limit=limit, with_metadata=False)
    assert (read.content, read.has_more, read.total_chars) == (content, has_more, len(text))
    assert (read.offset, read.limit, read.metadata) == (offset, limit, None)


def test_pages_stepped_through_give_the_whole_text() -> None:
    text = "line one\nline two 😀\n" * 37
    offset, pieces = 0, []
    while True:
        read = page(result(text), offset=offset, limit=50, with_metadata=True)
        pieces.append(read.content)
        offset += len(read.content)
        if not read.has_more:
            break
    assert "".join(pieces) == text
    assert read.metadata is not None
    assert (read.metadata.tool_name, read.metadata.seq) == ("read_log", 3)
    assert len(read.metadata.sha256) == 64


@pytest.mark.parametrize(
    ("text", "query", "limit", "context", "found", "has_more"),
    [
        ("no match here", "needle", 5, 3, [], False),
        ("a Needle b", "needle", 5, 2, [(2, 1, "a Needle b", 0)], False),  # case ignored
        ("x\ny\nneedle", "NEEDLE", 5, 0, [(4, 3, "needle", 4)], False),  # third line
        ("aaaa", "aa", 5, 0, [(0, 1, "aa", 0), (2, 1, "aa", 2)], False),  # no overlap
        ("n n n", "n", 2, 0, [(0, 1, "n", 0), (2, 1, "n", 2)], True),  # above the limit
        ("n n", "n", 2, 0, [(0, 1, "n", 0), (2, 1, "n", 2)], False),  # at the limit
        ("n n", "n", 1, 0, [(0, 1, "n", 0)], True),  # below it
        ("ab.c", ".", 5, 1, [(2, 1, "b.c", 1)], False),  # the query is text, not a pattern
        ("😀needle", "needle", 5, 1, [(1, 1, "😀needle", 0)], False),
        ("12345needle12345", "needle", 5, 2, [(5, 1, "45needle12", 3)], False),
    ],
)
def test_search_gives_each_match_with_its_line_and_snippet(
    text: str,
    query: str,
    limit: int,
    context: int,
    found: list[tuple[int, int, str, int]],
    has_more: bool,
) -> None:
    matches = search(text, query, limit=limit, context_chars=context)
    got = [(m.offset, m.line, m.snippet, m.snippet_offset) for m in matches.matches]
    assert (got, matches.has_more) == (found, has_more)
    for match in matches.matches:
        assert text[match.offset : match.offset + len(query)].lower() == query.lower()


def test_select_filters_by_tool_then_takes_the_first() -> None:
    results = [result("a", "c1", "grep"), result("b", "c2", "read"), result("c", "c3", "grep")]
    assert [r.tool_call_id for r in select(results, None, 2)] == ["c1", "c2"]
    assert [r.tool_call_id for r in select(results, "grep", 50)] == ["c1", "c3"]
    assert [r.tool_call_id for r in select(results, "grep", 1)] == ["c1"]
    assert select(results, "missing", 50) == []
