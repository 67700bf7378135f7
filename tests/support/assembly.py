"""Building blocks of the pure context-assembly tables: a word counter, messages by code,
stored messages, a working memory with all seven sections."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from app.archives.working_memory import WorkingMemory
from app.context.assembly import Hint
from app.sessions.records import StoredMessage
from app.wm.sections import Section


def words(text: str) -> int:
    """A counter whose arithmetic a table can state: one token per whitespace-separated word."""
    return len(text.split())


def message(code: str) -> dict[str, Any]:
    """``u`` user, ``a`` assistant, ``s`` system, ``c:1,2`` a call of ids 1 and 2, ``t:1`` a result."""
    kind, _, ids = code.partition(":")
    if kind == "c":
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"id{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                for i in ids.split(",")
            ],
        }
    if kind == "t":
        return {"role": "tool", "tool_call_id": f"id{ids}", "content": "r"}
    role = {"u": "user", "a": "assistant", "s": "system"}[kind]
    return {"role": role, "content": code}


def stored(seq: int, message: dict[str, Any], tokens: int) -> StoredMessage:
    """A stored message as the assembly sees it: its seq, its OpenAI dict, its token count."""
    return StoredMessage(
        seq=seq,
        role=message.get("role", "user"),
        turn=0,
        message=message,
        token_count=tokens,
        metadata=None,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def same_hint(text: str) -> Hint:
    return Hint(text, text)


def summarised(sections: dict[Section, str]) -> WorkingMemory:
    return WorkingMemory(archive_seq=1, covered_end_seq=0, sections=sections)


def candidates(codes: Sequence[str], tokens: Sequence[int] | None = None) -> list[StoredMessage]:
    counts = tokens or [1] * len(codes)
    return [
        stored(seq, message(code), n)
        for seq, (code, n) in enumerate(zip(codes, counts, strict=True), 1)
    ]


def full_sections() -> dict[Section, str]:
    return {
        Section.SESSION_TITLE: "Migrate the billing service to Postgres 16",
        Section.CURRENT_STATE: "Running the data copy; the dry run passed yesterday.",
        Section.TASK_AND_GOALS: "- Move billing off MySQL\n- Never deploy on Fridays",
        Section.KEY_FACTS: "\n".join(f"- fact number {i} about invoices" for i in range(1, 41)),
        Section.FILES: "\n".join(f"- src/billing/module_{i}.py" for i in range(1, 31)),
        Section.ERRORS: "- psycopg OperationalError on copy: fixed by raising the timeout",
        Section.OPEN_ISSUES: "- Who signs off the cutover?",
    }
