"""The local OpenAI-compatible server: strict request validation, scripting and recording.

Talks to it with a plain HTTP client, so that bodies the SDK would never build can be sent too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.fake_openai import (
    ErrorReply,
    FakeOpenAI,
    InvalidChatRequestError,
    TextReply,
    ToolCallReply,
    check_chat_request,
)

AUTH = {"Authorization": "Bearer test-key"}


def call(tool_call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {
        "id": tool_call_id,
        "type": "function",
        "function": {"name": name, "arguments": '{"path": "a.py"}'},
    }


def assistant_calls(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids]}


def tool_result(tool_call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": tool_call_id, "content": "ok"}


SYSTEM = {"role": "system", "content": "You are helpful."}
USER = {"role": "user", "content": "Read a.py"}
ASSISTANT = {"role": "assistant", "content": "Done."}

GOOD_MESSAGE_LISTS: dict[str, list[dict[str, Any]]] = {
    "one user message": [USER],
    "plain conversation": [SYSTEM, USER, ASSISTANT, USER],
    "tool group": [SYSTEM, USER, assistant_calls("c1"), tool_result("c1"), ASSISTANT],
    "parallel calls answered in any order": [
        USER,
        assistant_calls("c1", "c2"),
        tool_result("c2"),
        tool_result("c1"),
        ASSISTANT,
    ],
    "two tool groups": [
        USER,
        assistant_calls("c1"),
        tool_result("c1"),
        assistant_calls("c2"),
        tool_result("c2"),
    ],
    "content parts": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    "an image from a user, a refusal from the assistant": [
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
        },
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot."}]},
        USER,
    ],
    "developer role": [{"role": "developer", "content": "Be brief."}, USER],
    "named participants": [{"role": "user", "name": "ann", "content": "hi"}, ASSISTANT],
}

BAD_MESSAGE_LISTS: dict[str, tuple[list[Any], str]] = {
    "empty": ([], "messages"),
    "starts with a tool message": ([tool_result("c1"), USER], "messages[0].role"),
    "tool message without its call": ([USER, ASSISTANT, tool_result("c1")], "messages[2].role"),
    "tool message answering an unknown id": (
        [USER, assistant_calls("c1"), tool_result("c2")],
        "messages[2].role",
    ),
    "call left unanswered at the end": ([USER, assistant_calls("c1")], "messages"),
    "one of two calls unanswered": (
        [USER, assistant_calls("c1", "c2"), tool_result("c1"), USER],
        "messages[3]",
    ),
    "answer separated from its call": (
        [USER, assistant_calls("c1"), USER, tool_result("c1")],
        "messages[2]",
    ),
    "the same call answered twice": (
        [USER, assistant_calls("c1"), tool_result("c1"), tool_result("c1")],
        "messages[3].role",
    ),
    "unknown role": ([{"role": "robot", "content": "beep"}], "messages[0].role"),
    "missing role": ([{"content": "hi"}], "messages[0].role"),
    "message not an object": (["hello"], "messages[0]"),
    "user without content": ([{"role": "user"}], "messages[0].content"),
    "assistant with neither content nor calls": (
        [USER, {"role": "assistant", "content": None}],
        "messages[1].content",
    ),
    "tool message without tool_call_id": (
        [USER, assistant_calls("c1"), {"role": "tool", "content": "x"}],
        "messages[2].tool_call_id",
    ),
    "empty tool_calls": ([USER, {"role": "assistant", "tool_calls": []}], "messages[1].tool_calls"),
    "tool call with arguments not a string": (
        [
            USER,
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f"}}],
            },
            tool_result("c1"),
        ],
        "messages[1].tool_calls[0].function",
    ),
    "a part type the role cannot send": (
        [{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
        "messages[0].content[0].type",
    ),
    "an unknown part type": (
        [{"role": "user", "content": [{"type": "bogus"}]}],
        "messages[0].content[0].type",
    ),
    "a text part without text": (
        [{"role": "user", "content": [{"type": "text"}]}],
        "messages[0].content[0].text",
    ),
    "no parts at all": ([{"role": "user", "content": []}], "messages[0].content"),
    "internal fields on a message": (
        [{"role": "user", "content": "hi", "seq": 4, "tokens": 2}],
        "messages[0]",
    ),
    "unknown field on a tool call": (
        [USER, {"role": "assistant", "tool_calls": [{**call("c1"), "result": "x"}]}],
        "messages[1].tool_calls[0]",
    ),
    "tool_call_id on a user message": (
        [{"role": "user", "content": "hi", "tool_call_id": "c1"}],
        "messages[0]",
    ),
    "duplicate call ids": (
        [USER, assistant_calls("c1", "c1"), tool_result("c1")],
        "messages[1].tool_calls[1]",
    ),
}

FORCED_TOOL = {"type": "function", "function": {"name": "update_working_memory"}}
TOOLS = [{"type": "function", "function": {"name": "update_working_memory", "parameters": {}}}]


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    # One client for the module: building a client's TLS context dominates a loopback request.
    with httpx.Client(timeout=5) as client:
        yield client


def post(
    http: httpx.Client, fake: FakeOpenAI, body: object, headers: dict[str, str] = AUTH
) -> httpx.Response:
    return http.post(f"{fake.base_url}/chat/completions", json=body, headers=headers)


@pytest.mark.parametrize("messages", GOOD_MESSAGE_LISTS.values(), ids=GOOD_MESSAGE_LISTS.keys())
def test_well_formed_message_lists_are_answered(
    http: httpx.Client, fake_openai: FakeOpenAI, messages: list[dict[str, Any]]
) -> None:
    response = post(http, fake_openai, {"model": "m", "messages": messages})

    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "ok"


@pytest.mark.parametrize(
    ("messages", "param"), BAD_MESSAGE_LISTS.values(), ids=BAD_MESSAGE_LISTS.keys()
)
def test_malformed_message_lists_get_a_400_with_openai_error_body(
    http: httpx.Client, fake_openai: FakeOpenAI, messages: list[Any], param: str
) -> None:
    fake_openai.push(TextReply("scripted"))

    response = post(http, fake_openai, {"model": "m", "messages": messages})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert fake_openai.pending_replies == 1, "a rejected request must not consume a reply"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [USER]}, "model"),
        ({"model": "", "messages": [USER]}, "model"),
        ({"model": "m"}, "messages"),
        ({"model": "m", "messages": [USER], "tool_choice": FORCED_TOOL}, "tool_choice"),
        (
            {
                "model": "m",
                "messages": [USER],
                "tools": TOOLS,
                "tool_choice": {"type": "function", "function": {"name": "other"}},
            },
            "tool_choice",
        ),
        (
            {"model": "m", "messages": [USER], "tools": [{"type": "function", "function": {}}]},
            "tools[0].function.name",
        ),
        ({"model": "m", "messages": [USER], "tools": []}, "tools"),
        ({"model": "m", "messages": [USER], "temperature": 3}, "temperature"),
        ({"model": "m", "messages": [USER], "stream": True}, "stream"),
    ],
)
def test_malformed_request_fields_are_rejected(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidChatRequestError) as caught:
        check_chat_request(body)

    assert caught.value.param == param


def test_a_forced_tool_among_the_tools_is_accepted() -> None:
    check_chat_request(
        {"model": "m", "messages": [USER], "tools": TOOLS, "tool_choice": FORCED_TOOL}
    )


def test_a_body_that_is_not_json_is_a_400(http: httpx.Client, fake_openai: FakeOpenAI) -> None:
    response = http.post(f"{fake_openai.base_url}/chat/completions", content=b"{nope", headers=AUTH)

    assert response.status_code == 400


def test_a_request_without_a_key_is_a_401(http: httpx.Client, fake_openai: FakeOpenAI) -> None:
    response = post(http, fake_openai, {"model": "m", "messages": [USER]}, headers={})

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"


def test_an_unknown_path_is_a_404(http: httpx.Client, fake_openai: FakeOpenAI) -> None:
    response = http.post(f"{fake_openai.base_url}/images/generations", json={}, headers=AUTH)

    assert response.status_code == 404


def test_replies_follow_the_script_then_the_default(
    http: httpx.Client, fake_openai: FakeOpenAI
) -> None:
    body = {"model": "m", "messages": [USER], "tools": TOOLS, "tool_choice": FORCED_TOOL}
    fake_openai.push(ToolCallReply('{"x": 1}'), ErrorReply(429, retry_after_s=1.5))

    first, second, third = (post(http, fake_openai, body) for _ in range(3))

    tool_calls = first.json()["choices"][0]["message"]["tool_calls"]
    assert [c["function"] for c in tool_calls] == [
        {"name": "update_working_memory", "arguments": '{"x": 1}'}
    ]
    assert first.json()["choices"][0]["finish_reason"] == "tool_calls"
    assert second.status_code == 429
    assert second.headers["retry-after-ms"] == "1500"
    assert second.json()["error"]["code"] == "rate_limit_exceeded"
    assert third.json()["choices"][0]["message"]["content"] == "ok"


def test_script_replaces_the_queue(http: httpx.Client, fake_openai: FakeOpenAI) -> None:
    fake_openai.push(TextReply("first"), TextReply("second"))
    fake_openai.script(TextReply("only"))

    response = post(http, fake_openai, {"model": "m", "messages": [USER]})

    assert response.json()["choices"][0]["message"]["content"] == "only"
    assert fake_openai.pending_replies == 0


def test_every_request_is_recorded_with_its_status(
    http: httpx.Client, fake_openai: FakeOpenAI
) -> None:
    good = {"model": "m", "messages": [USER]}
    bad = {"model": "m", "messages": [tool_result("c1")]}

    post(http, fake_openai, good)
    post(http, fake_openai, bad)

    assert [(r.body, r.status) for r in fake_openai.requests] == [(good, 200), (bad, 400)]
