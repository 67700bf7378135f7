"""Tool results in OpenViking's terms: the answers of its ``tool-results`` routes, a page of one
result's text and the matches of a search inside it.

A tool result here is the ``tool`` message that answers a call, whole as stored: its id is the
call's id (unique within a session). Offsets and lengths count Unicode code points, as
OpenViking's do (``offset_unit``), so a page ends where the next one starts. Pure: no database,
no web framework.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from pydantic import BaseModel, Field

from app.compat.openviking import ids
from app.sessions.records import ToolResult

OFFSET_UNIT: Final = "unicode_code_point"
MIME_TYPE: Final = "text/plain"
READ_LIMIT_DEFAULT = 20_000
READ_LIMIT_MAX = 1_000_000
"""The most characters one read may ask for; ``-1`` reads to the end whatever the length."""
LIST_LIMIT_DEFAULT = 50
LIST_LIMIT_MAX = 1000
SEARCH_LIMIT_DEFAULT = 20
SEARCH_LIMIT_MAX = 1000
CONTEXT_CHARS_DEFAULT = 300
CONTEXT_CHARS_MAX = 10_000
QUERY_MAX_LENGTH = 1000
TOOL_RESULT_ID_MAX_LENGTH = 512

OffsetUnit = Literal["unicode_code_point"]


class ToolResultListed(BaseModel):
    tool_result_id: str = Field(description="the id of the tool call this result answers")
    tool_name: str = Field(description='the called tool ("" when no call names it)')
    original_chars: int = Field(description="the result's length, in code points")
    mime_type: str = MIME_TYPE
    synopsis_kind: Literal["text"] = "text"
    storage_uri: str
    offset_unit: OffsetUnit = OFFSET_UNIT
    seq: int = Field(description="the seq of the message that holds it")
    created_at: datetime


class ToolResultList(BaseModel):
    tool_results: list[ToolResultListed]


class ToolResultMetadata(BaseModel):
    tool_name: str
    mime_type: str = MIME_TYPE
    sha256: str = Field(description="of the whole result's UTF-8 text")
    seq: int
    created_at: datetime
    redacted: bool = Field(description="the content was replaced by [redacted]")


class ToolResultPage(BaseModel):
    tool_result_id: str
    content: str = Field(description="the characters from offset, at most limit of them")
    offset: int
    limit: int = Field(description="as asked; -1 read to the end")
    offset_unit: OffsetUnit = OFFSET_UNIT
    total_chars: int
    has_more: bool = Field(description="characters follow the page: read on from offset + len")
    metadata: ToolResultMetadata | None = Field(
        default=None, description="left out with include_metadata=false"
    )


class ToolResultMatch(BaseModel):
    offset: int = Field(description="where the match starts in the result")
    offset_unit: OffsetUnit = OFFSET_UNIT
    line: int = Field(description="the line the match starts on, from 1")
    snippet: str = Field(description="the match with up to context_chars either side")
    snippet_offset: int = Field(description="where the snippet starts in the result")


class ToolResultMatches(BaseModel):
    tool_result_id: str
    query: str
    matches: list[ToolResultMatch]
    has_more: bool = Field(description="more matches follow the last one given")


def storage_uri(session_id: str, tool_result_id: str) -> str:
    return f"{ids.session_uri(session_id)}/tool-results/{tool_result_id}"


def listed(session_id: str, result: ToolResult) -> ToolResultListed:
    return ToolResultListed(
        tool_result_id=result.tool_call_id,
        tool_name=result.tool_name,
        original_chars=len(result.text),
        storage_uri=storage_uri(session_id, result.tool_call_id),
        seq=result.seq,
        created_at=result.created_at,
    )


def select(results: list[ToolResult], tool_name: str | None, limit: int) -> list[ToolResult]:
    """The first ``limit`` results (oldest first), of ``tool_name`` only when one is given."""
    kept = [item for item in results if tool_name is None or item.tool_name == tool_name]
    return kept[:limit]


def page(result: ToolResult, *, offset: int, limit: int, with_metadata: bool) -> ToolResultPage:
    """``limit`` characters from ``offset`` (``-1``: all that follow). An offset at or past the
    end is an empty page, not an error, so a reader stepping on never fails on the last step."""
    text = result.text
    end = len(text) if limit == -1 else min(len(text), offset + limit)
    content = text[offset:end] if offset < len(text) else ""
    metadata = None
    if with_metadata:
        metadata = ToolResultMetadata(
            tool_name=result.tool_name,
            sha256=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            seq=result.seq,
            created_at=result.created_at,
            redacted=result.redacted,
        )
    return ToolResultPage(
        tool_result_id=result.tool_call_id,
        content=content,
        offset=offset,
        limit=limit,
        total_chars=len(text),
        has_more=offset + len(content) < len(text),
        metadata=metadata,
    )


@dataclass(frozen=True, slots=True)
class Found:
    matches: list[ToolResultMatch]
    has_more: bool


def search(text: str, query: str, *, limit: int, context_chars: int) -> Found:
    """The first ``limit`` places ``query`` occurs in ``text``, ignoring case, each with the
    line it starts on and ``context_chars`` characters either side. Matches do not overlap:
    the next is looked for after the end of the last."""
    pattern = re.compile(re.escape(query), re.IGNORECASE)
    matches: list[ToolResultMatch] = []
    line, counted_upto = 1, 0
    for found in pattern.finditer(text):
        if len(matches) == limit:
            return Found(matches, True)
        start, end = found.span()
        line += text.count("\n", counted_upto, start)
        counted_upto = start
        snippet_start = max(0, start - context_chars)
        matches.append(
            ToolResultMatch(
                offset=start,
                line=line,
                snippet=text[snippet_start : end + context_chars],
                snippet_offset=snippet_start,
            )
        )
    return Found(matches, False)
