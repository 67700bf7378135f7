"""The offline extractor's batches: about the budget each, never splitting a tool group."""

from __future__ import annotations

from typing import Any

import pytest

from app.archives.plan import offline_batches


def text(chars: int, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": "x" * chars}


def call(chars: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "y" * chars}}
        ],
    }


def result(chars: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "c", "content": "z" * chars}


@pytest.mark.parametrize(
    ("messages", "budget", "sizes"),
    [
        ([text(39), text(39), text(39)], 20, [2, 1]),  # 10 tokens each
        ([text(39), text(39), text(39)], 30, [3]),
        ([text(39), text(39), text(39)], 29, [2, 1]),
        # A call and its results go together, even over the budget.
        ([text(39), call(36), result(400), text(39)], 15, [1, 2, 1]),
        ([result(400)], 5, [1]),
        ([text(4000)], 10, [1]),
    ],
)
def test_offline_batches(messages: list[dict[str, Any]], budget: int, sizes: list[int]) -> None:
    batches = offline_batches(messages, budget)
    assert [len(batch) for batch in batches] == sizes
    assert [m for batch in batches for m in batch] == messages
