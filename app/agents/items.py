"""Between the Agents SDK's input items (Responses API shapes) and the OpenAI chat messages
workmem stores and assembles.

Items become messages through the SDK's own converter (the one its chat-completions model uses),
so a reasoning item, which chat messages cannot hold, is left out. Messages become items here:
user, system and developer messages keep their role and content parts, an assistant message
becomes its text and one ``function_call`` per tool call, a tool message a
``function_call_output``. Item ids are not kept. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from agents.items import TResponseInputItem
from agents.models.chatcmpl_converter import Converter
from openai.types.responses import (
    EasyInputMessageParam,
    ResponseFunctionToolCallParam,
    ResponseInputContentParam,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput


def stored_messages(items: Sequence[TResponseInputItem]) -> list[dict[str, Any]]:
    """The chat messages to append for ``items`` (consecutive tool calls become one assistant
    message, as a chat model would have sent them)."""
    return [dict(message) for message in Converter.items_to_messages(list(items))]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text") or part.get("refusal") or "")
            for part in content
            if isinstance(part, Mapping)
        ]
        return "".join(parts)
    return ""


def _input_part(part: Mapping[str, Any]) -> ResponseInputContentParam | None:
    kind = part.get("type")
    if kind == "text":
        return {"type": "input_text", "text": str(part.get("text", ""))}
    if kind == "image_url":
        image = part.get("image_url") or {}
        return {
            "type": "input_image",
            "image_url": str(image.get("url", "")),
            "detail": image.get("detail") or "auto",
        }
    if kind == "file":
        file = {k: v for k, v in (part.get("file") or {}).items() if v is not None}
        return cast(ResponseInputContentParam, {"type": "input_file", **file})
    if kind == "input_audio":
        return cast(
            ResponseInputContentParam,
            {"type": "input_audio", "input_audio": part.get("input_audio")},
        )
    return None


def message_items(message: Mapping[str, Any]) -> list[TResponseInputItem]:
    """The input items of one chat message (an assistant message with text and tool calls is
    several: its text first, then each call)."""
    role = message.get("role")
    content = message.get("content")
    if role == "tool":
        output: FunctionCallOutput = {
            "type": "function_call_output",
            "call_id": str(message.get("tool_call_id", "")),
            "output": _text(content),
        }
        return [output]
    if role == "assistant":
        items: list[TResponseInputItem] = []
        text = _text(content)
        if text:
            said: EasyInputMessageParam = {"role": "assistant", "content": text}
            items.append(said)
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            called: ResponseFunctionToolCallParam = {
                "type": "function_call",
                "call_id": str(call.get("id", "")),
                "name": str(function.get("name", "")),
                "arguments": str(function.get("arguments", "")),
            }
            items.append(called)
        return items
    if role in ("user", "system", "developer"):
        if isinstance(content, list):
            parts = [_input_part(part) for part in content if isinstance(part, Mapping)]
            typed: EasyInputMessageParam = {
                "role": role,
                "content": [part for part in parts if part is not None],
            }
            return [typed]
        plain: EasyInputMessageParam = {"role": role, "content": _text(content)}
        return [plain]
    return []


def input_items(
    messages: Sequence[Mapping[str, Any]], system_prompt_addition: str = ""
) -> list[TResponseInputItem]:
    """A context as input items: the system-prompt addition (when given) as a system message,
    then every message's items."""
    items: list[TResponseInputItem] = []
    if system_prompt_addition:
        hint: EasyInputMessageParam = {"role": "system", "content": system_prompt_addition}
        items.append(hint)
    for message in messages:
        items.extend(message_items(message))
    return items
