"""The ledger's pure parts, as tables: seq runs, the canonical hash, the hint's record, and the
rebuild of raw messages (cleared results as their placeholder, fields the chat API refuses
left out)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest

from app.context.assembly import CUT_NOTE
from app.context.clearing import placeholder
from app.context.hint import ArchiveRange, system_prompt_addition
from app.ledger.rebuild import hint_text, raw_messages
from app.ledger.records import HintSpec, expand_ranges, messages_sha256, seq_ranges
from app.sessions.records import MessageRole, StoredMessage

AT = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seqs", "ranges"),
    [
        ([], []),
        ([5], [[5, 5]]),
        ([1, 2, 3], [[1, 3]]),
        ([1, 2, 3, 7], [[1, 3], [7, 7]]),
        ([1, 3, 5], [[1, 1], [3, 3], [5, 5]]),
        ([10, 11, 13, 14, 15, 20], [[10, 11], [13, 15], [20, 20]]),
    ],
)
def test_seq_runs_round_trip(seqs: list[int], ranges: list[list[int]]) -> None:
    assert seq_ranges(seqs) == ranges
    assert expand_ranges(ranges) == seqs


@pytest.mark.parametrize(
    ("messages", "canonical"),
    [
        ([], "[]"),
        ([{"role": "user", "content": "hé"}], '[{"content":"hé","role":"user"}]'),
        ([{"content": "x", "role": "user"}], '[{"content":"x","role":"user"}]'),
        (
            [{"role": "tool", "tool_call_id": "c", "content": None}],
            '[{"content":null,"role":"tool","tool_call_id":"c"}]',
        ),
    ],
)
def test_the_hash_is_of_sorted_compact_utf8_json(
    messages: list[dict[str, Any]], canonical: str
) -> None:
    assert messages_sha256(messages) == hashlib.sha256(canonical.encode()).hexdigest()


def test_key_order_does_not_change_the_hash_and_content_does() -> None:
    one = [{"role": "user", "content": "a"}]
    assert messages_sha256(one) == messages_sha256([{"content": "a", "role": "user"}])
    assert messages_sha256(one) != messages_sha256([{"role": "user", "content": "a "}])


def stored(seq: int, role: MessageRole, message: dict[str, Any], tokens: int = 50) -> StoredMessage:
    return StoredMessage(seq, role, 1, message, tokens, None, AT)


CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"arguments": "{}"}},
    ],
}
PATH = "/v1/sessions/s/messages"


@pytest.mark.parametrize(
    ("cleared", "expected_contents"),
    [
        (set(), ["result one", "result two"]),
        ({2}, [placeholder("read_file", 50, 2, PATH), "result two"]),
        ({3}, ["result one", placeholder("a tool", 50, 3, PATH)]),
        ({2, 3}, [placeholder("read_file", 50, 2, PATH), placeholder("a tool", 50, 3, PATH)]),
    ],
)
def test_cleared_results_become_their_placeholder(
    cleared: set[int], expected_contents: list[str]
) -> None:
    sent = [
        stored(1, "assistant", CALL),
        stored(
            2, "tool", {"role": "tool", "tool_call_id": "c1", "content": "result one", "name": "x"}
        ),
        stored(3, "tool", {"role": "tool", "tool_call_id": "c2", "content": "result two"}),
    ]
    messages = raw_messages(sent, cleared=cleared, messages_path=PATH)
    assert [m["content"] for m in messages[1:]] == expected_contents
    # Fields the chat API refuses (a tool result's name) are left out, as when it was sent.
    assert "name" not in messages[1]
    assert messages[0]["tool_calls"] == CALL["tool_calls"]


ARCHIVES = ((3, 21, 30), (2, 11, 20), (1, 1, 10))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (HintSpec("omitted", False, False, ARCHIVES), ""),
        (
            HintSpec("with_summary", False, False, ARCHIVES),
            system_prompt_addition(
                "s",
                summary_archive=ArchiveRange(2, 1, 20),
                index=[ArchiveRange(*a) for a in ARCHIVES],
                listed=3,
            ),
        ),
        (
            HintSpec("with_summary", False, True, ARCHIVES),
            system_prompt_addition(
                "s",
                summary_archive=ArchiveRange(2, 1, 20),
                index=[ArchiveRange(*a) for a in ARCHIVES],
                listed=3,
                fill=True,
            ),
        ),
        (
            HintSpec("with_summary", True, False, ARCHIVES),
            system_prompt_addition(
                "s",
                summary_archive=ArchiveRange(2, 1, 20),
                index=[ArchiveRange(*a) for a in ARCHIVES],
                listed=3,
            )
            + " "
            + CUT_NOTE,
        ),
        (
            HintSpec("without_summary", False, True, ARCHIVES),
            system_prompt_addition(
                "s",
                summary_archive=ArchiveRange(2, 1, 20),
                index=[ArchiveRange(*a) for a in ARCHIVES],
                listed=3,
                summary_sent=False,
            ),
        ),
        (HintSpec("without_summary", False, False, ()), ""),
    ],
)
def test_the_hint_is_rewritten_from_its_record(spec: HintSpec, expected: str) -> None:
    assert HintSpec.from_json(spec.as_json()) == spec
    text = hint_text(spec, "s", summary_archive_seq=2, summary_covered_end_seq=20)
    assert text == expected
