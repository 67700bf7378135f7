"""The `openai` provider, driven by the real SDK against the local OpenAI-compatible server.

Covers what each kind of reply becomes at the port, and which failures are retried how often.
Never patches or mocks the SDK: every call goes over loopback HTTP.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from app.llm.openai_provider import OpenAIChatModel, backoff_delay
from app.llm.ports import (
    ChatModel,
    PermanentModelError,
    ToolCallOutcome,
    TransientModelError,
    Usage,
)
from tests.support.fake_openai import (
    DelayedReply,
    ErrorReply,
    FakeOpenAI,
    RawReply,
    TextReply,
    ToolCallReply,
)

API_KEY = "sk-test-0123456789"
TOOL: dict[str, Any] = {
    "name": "update_working_memory",
    "description": "Update the working memory.",
    "parameters": {
        "type": "object",
        "properties": {"sections": {"type": "object"}},
        "required": ["sections"],
        "additionalProperties": False,
    },
}
GOOD_ARGUMENTS = '{"sections": {"Current State": {"op": "KEEP"}}}'


def chat_model(
    fake: FakeOpenAI,
    *,
    # Generous by default so a loaded machine never turns a slow answer into a timeout; the
    # timeout tests pass their own short value.
    timeout_s: float = 5.0,
    max_retries: int = 2,
    temperature: float | None = 0.0,
    backoff_max_s: float = 0.05,
) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=fake.base_url,
        api_key=API_KEY,
        model="test-model",
        timeout_s=timeout_s,
        max_retries=max_retries,
        temperature=temperature,
        backoff_base_s=0.01,
        backoff_max_s=backoff_max_s,
    )


async def call(model: ChatModel, *, timeout_s: float | None = None) -> ToolCallOutcome:
    return await model.call_tool(
        system="You maintain a working memory.",
        user="[user]: hello",
        tool=TOOL,
        timeout_s=timeout_s,
    )


async def test_a_good_tool_call_returns_its_arguments_and_usage(fake_openai: FakeOpenAI) -> None:
    fake_openai.push(ToolCallReply(GOOD_ARGUMENTS, prompt_tokens=120, completion_tokens=30))

    async with chat_model(fake_openai) as model:
        outcome = await call(model)

    assert outcome.arguments == GOOD_ARGUMENTS
    assert outcome.text is None
    assert outcome.usage == Usage(prompt_tokens=120, completion_tokens=30, calls=1)
    assert outcome.model == model.model == "test-model"


async def test_the_request_forces_the_tool_and_carries_the_prompts(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(ToolCallReply(GOOD_ARGUMENTS))

    async with chat_model(fake_openai) as model:
        await call(model)

    [request] = fake_openai.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body["model"] == "test-model"
    assert request.body["tools"] == [{"type": "function", "function": TOOL}]
    assert request.body["tool_choice"] == {
        "type": "function",
        "function": {"name": "update_working_memory"},
    }
    assert request.body["messages"] == [
        {"role": "system", "content": "You maintain a working memory."},
        {"role": "user", "content": "[user]: hello"},
    ]
    assert request.body["temperature"] == 0


async def test_temperature_none_leaves_the_parameter_out(fake_openai: FakeOpenAI) -> None:
    async with chat_model(fake_openai, temperature=None) as model:
        await call(model)

    assert "temperature" not in fake_openai.requests[0].body


async def test_no_tool_call_gives_no_arguments_and_the_text(fake_openai: FakeOpenAI) -> None:
    fake_openai.push(
        TextReply("I would rather write prose.", prompt_tokens=50, completion_tokens=9)
    )

    async with chat_model(fake_openai) as model:
        outcome = await call(model)

    assert outcome.arguments is None
    assert outcome.text == "I would rather write prose."
    assert outcome.usage == Usage(prompt_tokens=50, completion_tokens=9, calls=1)


async def test_a_call_to_another_function_counts_as_no_call(fake_openai: FakeOpenAI) -> None:
    fake_openai.push(ToolCallReply(GOOD_ARGUMENTS, name="something_else", content="hm"))

    async with chat_model(fake_openai) as model:
        outcome = await call(model)

    assert outcome.arguments is None
    assert outcome.text == "hm"


@pytest.mark.parametrize(
    "arguments",
    [
        '{"sections": {"Current State": {"op": "UPD',
        "{\u201csections\u201d: {}}",
        "```json\n{}\n```",
        "",
        "not json at all",
    ],
)
async def test_malformed_arguments_are_returned_verbatim(
    fake_openai: FakeOpenAI, arguments: str
) -> None:
    fake_openai.push(ToolCallReply(arguments))

    async with chat_model(fake_openai) as model:
        outcome = await call(model)

    assert outcome.arguments == arguments


async def test_a_429_is_retried_and_then_succeeds(fake_openai: FakeOpenAI) -> None:
    fake_openai.push(ErrorReply(429), ToolCallReply(GOOD_ARGUMENTS))

    async with chat_model(fake_openai, max_retries=2) as model:
        outcome = await call(model)

    assert outcome.arguments == GOOD_ARGUMENTS
    assert [request.status for request in fake_openai.requests] == [429, 200]


async def test_retry_after_from_the_server_is_waited_for(fake_openai: FakeOpenAI) -> None:
    fake_openai.push(ErrorReply(429, retry_after_s=0.25), ToolCallReply(GOOD_ARGUMENTS))

    started = time.monotonic()
    async with chat_model(fake_openai, backoff_max_s=1.0) as model:
        outcome = await call(model)

    assert outcome.arguments == GOOD_ARGUMENTS
    assert time.monotonic() - started >= 0.25
    assert len(fake_openai.requests) == 2


async def test_a_retry_after_beyond_the_backoff_cap_gives_up_at_once(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(ErrorReply(429, retry_after_s=30))

    async with chat_model(fake_openai, max_retries=3, backoff_max_s=1.0) as model:
        with pytest.raises(TransientModelError) as caught:
            await call(model)

    assert caught.value.code == "rate_limited"
    assert caught.value.status == 429
    assert caught.value.retry_after_s == 30
    assert len(fake_openai.requests) == 1


async def test_a_timeout_is_transient_after_every_attempt_timed_out(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(DelayedReply(3.0), DelayedReply(3.0))

    started = time.monotonic()
    async with chat_model(fake_openai, timeout_s=0.3, max_retries=1) as model:
        with pytest.raises(TransientModelError) as caught:
            await call(model)

    assert caught.value.code == "timeout"
    assert caught.value.status is None
    assert len(fake_openai.requests) == 2
    assert time.monotonic() - started < 2.0


async def test_the_per_call_timeout_overrides_the_client_timeout(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(DelayedReply(3.0))

    started = time.monotonic()
    async with chat_model(fake_openai, timeout_s=10.0, max_retries=0) as model:
        with pytest.raises(TransientModelError):
            await call(model, timeout_s=0.2)

    assert time.monotonic() - started < 2.0


async def test_a_timeout_then_success_succeeds(fake_openai: FakeOpenAI) -> None:
    fake_openai.push(DelayedReply(3.0), ToolCallReply(GOOD_ARGUMENTS))

    async with chat_model(fake_openai, timeout_s=1.0, max_retries=1) as model:
        outcome = await call(model)

    assert outcome.arguments == GOOD_ARGUMENTS
    assert len(fake_openai.requests) == 2


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_repeated_server_errors_are_transient_after_all_retries(
    fake_openai: FakeOpenAI, status: int
) -> None:
    fake_openai.script(*[ErrorReply(status)] * 3, ToolCallReply(GOOD_ARGUMENTS))

    async with chat_model(fake_openai, max_retries=2) as model:
        with pytest.raises(TransientModelError) as caught:
            await call(model)

    assert caught.value.code == "server_error"
    assert caught.value.status == status
    assert len(fake_openai.requests) == 3


async def test_a_retry_after_in_seconds_is_honoured_and_garbage_ignored(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(
        ErrorReply(503, headers={"retry-after": "0.2"}),
        ErrorReply(429, headers={"retry-after": "soon"}),
        ToolCallReply(GOOD_ARGUMENTS),
    )

    started = time.monotonic()
    async with chat_model(fake_openai, backoff_max_s=1.0) as model:
        outcome = await call(model)

    assert outcome.arguments == GOOD_ARGUMENTS
    assert time.monotonic() - started >= 0.2
    assert len(fake_openai.requests) == 3


async def test_a_server_asking_for_a_retry_of_a_400_is_not_obeyed(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(ErrorReply(400, headers={"x-should-retry": "true"}))

    async with chat_model(fake_openai, max_retries=3) as model:
        with pytest.raises(PermanentModelError):
            await call(model)

    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 408, 409, 422])
async def test_a_client_error_is_permanent_after_exactly_one_request(
    fake_openai: FakeOpenAI, status: int
) -> None:
    fake_openai.push(ErrorReply(status), ToolCallReply(GOOD_ARGUMENTS))

    async with chat_model(fake_openai, max_retries=3) as model:
        with pytest.raises(PermanentModelError) as caught:
            await call(model)

    assert caught.value.code == "client_error"
    assert caught.value.status == status
    assert len(fake_openai.requests) == 1


async def test_error_messages_keep_the_server_text_and_the_key_out(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(ErrorReply(401, message=f"Incorrect API key provided: {API_KEY}."))

    async with chat_model(fake_openai) as model:
        with pytest.raises(PermanentModelError) as caught:
            await call(model)

    message = str(caught.value)
    assert API_KEY not in message
    assert "Incorrect" not in message
    assert message == "model endpoint rejected the call (HTTP 401: invalid_api_key)"


async def test_an_error_body_that_is_not_openai_shaped_gives_just_the_status(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.push(RawReply(502, b"<html>Bad gateway at proxy-7</html>", "text/html"))

    async with chat_model(fake_openai, max_retries=0) as model:
        with pytest.raises(TransientModelError) as caught:
            await call(model)

    assert str(caught.value) == "model endpoint failed (HTTP 502)"


async def test_an_unreachable_endpoint_is_transient() -> None:
    with FakeOpenAI() as fake:
        model = chat_model(fake, max_retries=1)
    async with model:
        with pytest.raises(TransientModelError) as caught:
            await call(model)

    assert caught.value.code == "connection_error"


@pytest.mark.parametrize(
    "reply",
    [
        RawReply(200, b"plain text", content_type="text/plain"),
        RawReply(200, b'{"choices": [tru'),
        RawReply(200, b"\xff\xfe{"),
        RawReply(200, b"[1, 2]"),
        RawReply(200, b"{}"),
        RawReply(200, b'{"choices": []}'),
        RawReply(200, b'{"choices": [{"message": "hello"}]}'),
        RawReply(
            200,
            b'{"choices": [{"message": {"role": "assistant", "tool_calls": '
            b'[{"id": "c", "type": "function", '
            b'"function": {"name": "update_working_memory", "arguments": 7}}]}}]}',
        ),
    ],
    ids=[
        "text",
        "broken-json",
        "not-utf8",
        "array",
        "empty",
        "no-choices",
        "message-not-object",
        "arguments-not-string",
    ],
)
async def test_a_response_that_is_not_a_completion_is_permanent(
    fake_openai: FakeOpenAI, reply: RawReply
) -> None:
    fake_openai.push(reply)

    async with chat_model(fake_openai, max_retries=2) as model:
        with pytest.raises(PermanentModelError) as caught:
            await call(model)

    assert caught.value.code == "bad_response"
    assert len(fake_openai.requests) == 1


async def test_lenient_about_what_compatible_servers_leave_out(fake_openai: FakeOpenAI) -> None:
    # No `type` on the tool call, arguments already decoded, no usage and no model name.
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "function": {"name": "update_working_memory", "arguments": {"a": "é"}}}
        ],
    }
    fake_openai.push(RawReply(200, json.dumps({"choices": [{"message": message}]}).encode()))

    async with chat_model(fake_openai) as model:
        outcome = await call(model)

    assert outcome.arguments == '{"a": "é"}'
    assert outcome.usage == Usage(calls=1)
    assert outcome.model == "test-model"


async def test_an_unusable_tool_definition_is_a_caller_bug(fake_openai: FakeOpenAI) -> None:
    async with chat_model(fake_openai) as model:
        with pytest.raises(ValueError, match="name"):
            await model.call_tool(system="s", user="u", tool={"description": "no name"})

    assert fake_openai.requests == []


async def test_strict_and_description_are_passed_through(fake_openai: FakeOpenAI) -> None:
    tool = {"name": "t", "description": "d", "parameters": {"type": "object"}, "strict": True}

    async with chat_model(fake_openai) as model:
        await model.call_tool(system="s", user="u", tool=tool)

    assert fake_openai.requests[0].body["tools"] == [{"type": "function", "function": tool}]


@pytest.mark.parametrize(
    ("tool", "timeout_s", "complaint"),
    [
        ({"name": ""}, None, "name"),
        ({"name": "t", "parameters": "object"}, None, "parameters"),
        ({"name": "t"}, 0.0, "timeout_s"),
    ],
)
async def test_unusable_arguments_are_rejected_before_any_request(
    fake_openai: FakeOpenAI, tool: dict[str, Any], timeout_s: float | None, complaint: str
) -> None:
    async with chat_model(fake_openai) as model:
        with pytest.raises(ValueError, match=complaint):
            await model.call_tool(system="s", user="u", tool=tool, timeout_s=timeout_s)

    assert fake_openai.requests == []


@pytest.mark.parametrize(
    "overrides",
    [
        {"api_key": ""},
        {"model": ""},
        {"timeout_s": 0},
        {"max_retries": -1},
        {"backoff_base_s": -0.1},
    ],
)
def test_unusable_settings_are_rejected(overrides: dict[str, Any]) -> None:
    settings: dict[str, Any] = {
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": API_KEY,
        "model": "m",
        "timeout_s": 1.0,
        "max_retries": 0,
    }

    with pytest.raises(ValueError, match="must"):
        OpenAIChatModel(**{**settings, **overrides})


async def test_custom_tool_calls_and_other_names_are_skipped(fake_openai: FakeOpenAI) -> None:
    calls = [
        {"id": "c1", "type": "custom", "custom": {"name": "update_working_memory", "input": "x"}},
        {"id": "c2", "type": "function", "function": {"name": "other", "arguments": "{}"}},
        {
            "id": "c3",
            "type": "function",
            "function": {"name": "update_working_memory", "arguments": "{}"},
        },
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    fake_openai.push(RawReply(200, json.dumps({"choices": [{"message": message}]}).encode()))

    async with chat_model(fake_openai) as model:
        outcome = await call(model)

    assert outcome.arguments == "{}"


async def test_tool_calls_that_are_not_a_list_are_a_bad_response(
    fake_openai: FakeOpenAI,
) -> None:
    message = {"role": "assistant", "content": None, "tool_calls": "update_working_memory"}
    fake_openai.push(RawReply(200, json.dumps({"choices": [{"message": message}]}).encode()))

    async with chat_model(fake_openai) as model:
        with pytest.raises(PermanentModelError) as caught:
            await call(model)

    assert caught.value.code == "bad_response"


def test_the_api_key_stays_out_of_the_repr(fake_openai: FakeOpenAI) -> None:
    assert API_KEY not in repr(chat_model(fake_openai))


@pytest.mark.parametrize(
    ("retry_number", "jitter", "expected"),
    [
        (0, 0.0, 0.25),
        (0, 1.0, 0.5),
        (1, 0.0, 0.5),
        (2, 1.0, 2.0),
        (5, 1.0, 8.0),
        (5, 0.0, 4.0),
        (10_000, 0.5, 6.0),
    ],
)
def test_backoff_doubles_up_to_the_cap_with_half_of_it_jittered(
    retry_number: int, jitter: float, expected: float
) -> None:
    delay = backoff_delay(retry_number, base_s=0.5, max_s=8.0, jitter=jitter)

    assert delay == pytest.approx(expected)
