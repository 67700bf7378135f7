"""Badge tones and phrases for every reason code; raw messages as the page shows them."""

from __future__ import annotations

import pytest

from app.audit.presentation import (
    detail_text,
    is_intervention,
    message_lines,
    phrase,
    tone,
)
from app.wm.reasons import Reason


@pytest.mark.parametrize("reason", list(Reason))
def test_every_reason_has_a_tone_and_a_phrase(reason: Reason) -> None:
    assert tone(reason.value) != "other"
    assert phrase(reason.value)


@pytest.mark.parametrize(
    ("reason", "expected_tone", "intervention"),
    [
        ("accepted", "neutral", False),
        ("nothing_new", "neutral", False),
        ("open_issues_restored", "restored", True),
        ("files_path_regression", "rejected", True),
        ("errors_append_only", "demoted", True),
        ("emergency_sentinel", "alert", True),
        ("invalid_op", "invalid", True),
        ("imported", "other", True),
        ("a_code_added_later", "other", True),
    ],
)
def test_tones(reason: str, expected_tone: str, intervention: bool) -> None:
    assert tone(reason) == expected_tone
    assert is_intervention(reason) is intervention


def test_unknown_codes_read_as_words() -> None:
    assert phrase("a_code_added_later") == "a code added later"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("text", "text"), (3, "3"), (["a", 1], '["a", 1]'), ({"b": 1, "a": 2}, '{"a": 2, "b": 1}')],
)
def test_detail_text(value: object, expected: str) -> None:
    assert detail_text(value) == expected


def test_message_lines() -> None:
    plain = message_lines({"role": "user", "content": "hello"})
    assert (plain.text, plain.tool_calls, plain.tool_call_id) == ("hello", (), None)
    parts = message_lines(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:"}},
            ],
        }
    )
    assert parts.text == "look\n[image_url part]"
    call = message_lines(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "cat", "arguments": {"p": 1}},
                },
            ],
        }
    )
    assert [(c.name, c.arguments) for c in call.tool_calls] == [("ls", "{}"), ("cat", '{"p": 1}')]
    result = message_lines({"role": "tool", "tool_call_id": "c1", "content": "a.py"})
    assert (result.text, result.tool_call_id) == ("a.py", "c1")
