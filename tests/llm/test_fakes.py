"""The scripted chat model and the usage arithmetic of the port.

The scripted model is what tests of model-calling code rely on, so its contract is pinned here.
"""

from __future__ import annotations

import pytest

from app.llm.fakes import ChatCall, ScriptedChatModel, ScriptExhaustedError, no_tool_call, tool_call
from app.llm.ports import ChatModel, TransientModelError, Usage

TOOL = {"name": "update_working_memory", "parameters": {"type": "object"}}


async def test_steps_are_returned_or_raised_in_order_and_calls_recorded() -> None:
    timeout = TransientModelError("model request timed out", code="timeout")
    fake = ScriptedChatModel([tool_call('{"a": 1}'), timeout, no_tool_call("prose")], model="m1")
    model: ChatModel = fake

    first = await model.call_tool(system="s1", user="u1", tool=TOOL)
    with pytest.raises(TransientModelError) as caught:
        await model.call_tool(system="s2", user="u2", tool=TOOL, timeout_s=3.0)
    third = await model.call_tool(system="s3", user="u3", tool=TOOL)

    assert first.arguments == '{"a": 1}'
    assert caught.value is timeout
    assert third.arguments is None
    assert third.text == "prose"
    assert model.model == "m1"
    assert fake.calls == [
        ChatCall("s1", "u1", TOOL, None),
        ChatCall("s2", "u2", TOOL, 3.0),
        ChatCall("s3", "u3", TOOL, None),
    ]
    assert fake.remaining == 0


async def test_a_call_beyond_the_script_fails_the_test() -> None:
    fake = ScriptedChatModel()
    fake.push(tool_call("{}"))

    await fake.call_tool(system="s", user="u", tool=TOOL)
    with pytest.raises(ScriptExhaustedError, match="2 times"):
        await fake.call_tool(system="s", user="u", tool=TOOL)


def test_usage_adds_up() -> None:
    usages = [Usage(10, 2, 1), Usage(5, 1, 1), Usage(calls=1)]

    total = sum(usages, Usage())

    assert total == Usage(prompt_tokens=15, completion_tokens=3, calls=3)
    assert total.total_tokens == 18


def test_usage_adds_only_to_usage() -> None:
    with pytest.raises(TypeError):
        Usage() + 1  # type: ignore[operator]
