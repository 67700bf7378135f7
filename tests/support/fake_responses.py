"""The Responses API half of the local OpenAI-compatible test server: ``POST /v1/responses``.

Owns the strict checks of a request body (what the OpenAI Agents SDK sends by default: ``model``,
``input`` items, ``instructions``, function ``tools``) and the response object for a scripted
reply (a text message, or one function call, after a reasoning item when the reply has one),
whole or as the server-sent events of a stream. ``fake_openai`` routes the path here and keeps
the script, the recording and the error replies; never leaves loopback.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from tests.support.fake_openai import InvalidChatRequestError, TextReply, ToolCallReply

_REQUEST_KEYS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "include",
        "store",
        "stream",
        "temperature",
        "top_p",
        "max_output_tokens",
        "metadata",
        "text",
        "reasoning",
        "truncation",
        "previous_response_id",
        "user",
        "prompt_cache_key",
    }
)
_MESSAGE_ROLES = frozenset({"user", "system", "developer", "assistant"})
_INPUT_PARTS = frozenset({"input_text", "input_image", "input_file", "input_audio"})
_OUTPUT_PARTS = frozenset({"output_text", "refusal"})


def _check_message(item: Mapping[str, Any], where: str) -> None:
    role = item.get("role")
    if role not in _MESSAGE_ROLES:
        raise InvalidChatRequestError(f"Invalid value for '{where}.role': {role!r}.", where)
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not content:
        raise InvalidChatRequestError(
            f"Invalid '{where}.content': expected a string or a non-empty array.", where
        )
    allowed = (
        _OUTPUT_PARTS
        if role == "assistant" and item.get("type") == "message"
        else (_OUTPUT_PARTS | _INPUT_PARTS if role == "assistant" else _INPUT_PARTS)
    )
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            raise InvalidChatRequestError(
                f"Invalid value: {kind!r}. Supported values are: {', '.join(sorted(allowed))}.",
                f"{where}.content[{index}].type",
            )
        if kind in ("input_text", "output_text") and not isinstance(part.get("text"), str):
            raise InvalidChatRequestError(
                f"Missing required parameter: '{where}.content[{index}].text'.", where
            )


def check_responses_request(body: object) -> None:
    """Raise ``InvalidChatRequestError`` if the Responses API would reject this body."""
    if not isinstance(body, dict):
        raise InvalidChatRequestError("The request body must be a JSON object.")
    unknown = sorted(set(body) - _REQUEST_KEYS)
    if unknown:
        raise InvalidChatRequestError(f"Unknown parameter: '{unknown[0]}'.", unknown[0])
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidChatRequestError("Missing required parameter: 'model'.", "model")
    items = body.get("input")
    if isinstance(items, str):
        return
    if not isinstance(items, list) or not items:
        raise InvalidChatRequestError("Invalid 'input': expected a non-empty array.", "input")
    calls: set[str] = set()
    answered: set[str] = set()
    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise InvalidChatRequestError(f"Invalid type for '{where}': expected an object.", where)
        kind = item.get("type", "message")
        if kind == "message":
            _check_message(item, where)
        elif kind == "function_call":
            for name in ("call_id", "name", "arguments"):
                if not isinstance(item.get(name), str) or not item[name]:
                    raise InvalidChatRequestError(
                        f"Missing required parameter: '{where}.{name}'.", f"{where}.{name}"
                    )
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls:
                raise InvalidChatRequestError(
                    f"No tool call found for function call output with call_id {call_id}.",
                    where,
                )
            if not isinstance(item.get("output"), str | list):
                raise InvalidChatRequestError(
                    f"Missing required parameter: '{where}.output'.", where
                )
            answered.add(call_id)
        elif kind == "reasoning":
            if not isinstance(item.get("summary"), list) or not item.get("id"):
                raise InvalidChatRequestError(
                    f"Missing required parameter: '{where}.summary'.", where
                )
        else:
            raise InvalidChatRequestError(f"Invalid value for '{where}.type': {kind!r}.", where)
    missing = sorted(calls - answered)
    if missing:
        raise InvalidChatRequestError(
            f"No tool output found for function call {missing[0]}.", "input"
        )
    for index, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or tool.get("type") != "function" or not tool.get("name"):
            raise InvalidChatRequestError(f"Invalid 'tools[{index}]'.", f"tools[{index}]")


def response_object(
    reply: TextReply | ToolCallReply, body: Mapping[str, Any], number: int
) -> dict[str, Any]:
    """The Response a scripted reply becomes."""
    if isinstance(reply, TextReply):
        output: dict[str, Any] = {
            "type": "message",
            "id": f"msg_fake_{number}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
        }
    else:
        tools = body.get("tools") or [{}]
        output = {
            "type": "function_call",
            "id": f"fc_fake_{number}",
            "call_id": f"call_fake_{number}",
            "name": reply.name or tools[0].get("name", "tool"),
            "arguments": reply.arguments,
            "status": "completed",
        }
    reasoning = []
    if reply.reasoning is not None:
        summary = [{"type": "summary_text", "text": reply.reasoning}]
        reasoning = [{"type": "reasoning", "id": f"rs_fake_{number}", "summary": summary}]
    return {
        "id": f"resp_fake_{number}",
        "object": "response",
        "created_at": float(int(time.time())),
        "status": "completed",
        "model": body["model"],
        "output": [*reasoning, output],
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "usage": {
            "input_tokens": reply.prompt_tokens,
            "output_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def streamed_events(response: Mapping[str, Any]) -> bytes:
    """``response`` as a Responses API stream: created, each output item added and done, then
    completed (server-sent events, as ``stream: true`` is answered)."""
    started = {**response, "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(response["output"]):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': number})}\n\n".encode()
        for number, event in enumerate(events)
    )
