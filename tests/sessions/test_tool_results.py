"""The names of the calls tool results answer, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from app.sessions.tool_results import call_names, names_of_calls


def call(call_id: Any, name: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


@pytest.mark.parametrize(
    ("tool_calls", "unnamed", "names"),
    [
        (None, "", {}),
        ("not a list", "", {}),
        ([], "", {}),
        ([call("c1", "ls")], "", {"c1": "ls"}),
        ([call("c1", "")], "", {"c1": ""}),
        ([call("c1", None)], "a tool", {"c1": "a tool"}),
        ([call(7, "ls")], "", {}),
        (["not a call", {"id": "c2"}], "", {}),
        ([call("c1", "ls"), call("c2", "cat")], "", {"c1": "ls", "c2": "cat"}),
    ],
)
def test_call_names(tool_calls: Any, unnamed: str, names: dict[str, str]) -> None:
    assert call_names(tool_calls, unnamed=unnamed) == names


def test_names_of_calls_over_many_messages_later_wins() -> None:
    lists = [[call("c1", "ls")], None, [call("c1", "cat"), call("c2", "grep")]]
    assert names_of_calls(lists) == {"c1": "cat", "c2": "grep"}
