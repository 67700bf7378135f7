"""Between the Agents SDK's items (Responses API shapes) and the OpenAI chat messages workmem
stores, so that an item comes back exactly as it was added.

Each stored chat message carries, in its ``metadata``, the items it stands for (``ITEMS_KEY``),
with every text it already holds replaced by ``MOVED`` so nothing is stored twice. The chat
message is what the working memory, the context and any chat model read:

- a message item (any role, content a string or a list of parts) becomes one message of its role
  (``developer`` is stored as ``system``); text-bearing parts become text parts (a refusal a
  refusal part), a user's image, file and audio parts their chat parts;
- consecutive ``function_call`` items become one assistant message with ``tool_calls``;
- a ``function_call_output`` becomes a ``tool`` message;
- any other item (reasoning, hosted tool calls, …) has no chat form: it rides along with the next
  message of the same ``add_items`` (the last one when none follows, or an empty assistant
  message when the batch has nothing else).

A message stored by anything else (no ``ITEMS_KEY``) becomes items by its chat form. Pure: no I/O.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from agents.items import TResponseInputItem

ITEMS_KEY: Final = "agents_items"
"""The metadata key holding the items a stored message stands for."""

MOVED: Final[dict[str, str]] = {"$workmem": "in the chat message"}
"""Stands in an item for a value the chat message holds (no SDK item contains this object)."""

TEXT_KEYS: Final = ("text", "refusal")
CHAT_ROLES: Final = {"user": "user", "assistant": "assistant", "system": "system"}


def _is_moved(value: object) -> bool:
    return isinstance(value, Mapping) and dict(value) == MOVED


def _kind(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind is None or kind == "message":
        return "message" if item.get("role") in (*CHAT_ROLES, "developer") else "other"
    if kind in ("function_call", "function_call_output"):
        return str(kind)
    return "other"


# --- items to stored messages -------------------------------------------------------------------


def _chat_part(role: str, part: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One content part as a chat part, and the part as kept in the metadata."""
    kept = dict(part)
    kind = part.get("type")
    refusal = part.get("refusal")
    if role == "assistant" and kind == "refusal" and isinstance(refusal, str):
        kept["refusal"] = MOVED
        return {"type": "refusal", "refusal": refusal}, kept
    for key in TEXT_KEYS:
        value = part.get(key)
        if isinstance(value, str):
            kept[key] = MOVED
            return {"type": "text", "text": value}, kept
    if role == "user":
        image = part.get("image_url")
        if kind == "input_image" and isinstance(image, str) and image:
            kept["image_url"] = MOVED
            chat: dict[str, Any] = {"url": image}
            if part.get("detail") in ("auto", "low", "high"):
                chat["detail"] = part["detail"]
            return {"type": "image_url", "image_url": chat}, kept
        data, file_id = part.get("file_data"), part.get("file_id")
        if kind == "input_file" and (isinstance(data, str) or isinstance(file_id, str)):
            file = {
                key: part[key]
                for key in ("file_data", "file_id", "filename")
                if isinstance(part.get(key), str)
            }
            if "file_data" in file:
                kept["file_data"] = MOVED
            return {"type": "file", "file": file}, kept
    # Nothing a chat message can hold: a placeholder names it, the metadata keeps it whole.
    return {"type": "text", "text": f"[{kind}]"}, kept


def _message(item: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    role = str(item["role"])
    chat_role = CHAT_ROLES.get(role, "system")
    kept = dict(item)
    content = item.get("content")
    if isinstance(content, str):
        kept["content"] = MOVED
        return {"role": chat_role, "content": content}, kept
    parts = [part for part in content or [] if isinstance(part, Mapping)]
    if not parts or len(parts) != len(content or []):
        return {"role": chat_role, "content": ""}, kept
    chat_parts, kept_parts = zip(*(_chat_part(chat_role, part) for part in parts), strict=True)
    kept["content"] = list(kept_parts)
    if len(chat_parts) == 1 and chat_parts[0]["type"] == "text":
        return {"role": chat_role, "content": chat_parts[0]["text"]}, kept
    return {"role": chat_role, "content": list(chat_parts)}, kept


def _tool_call(item: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    kept = dict(item)
    arguments = item.get("arguments")
    if isinstance(arguments, str):
        kept["arguments"] = MOVED
    call = {
        "id": str(item.get("call_id", "")),
        "type": "function",
        "function": {"name": str(item.get("name", "")), "arguments": str(arguments or "")},
    }
    return call, kept


def _output_text(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, Mapping) else "" for part in output
        )
    return json.dumps(output, ensure_ascii=False)


def _tool_output(item: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    kept = dict(item)
    output = item.get("output")
    if isinstance(output, str):
        kept["output"] = MOVED
    chat = {"role": "tool", "tool_call_id": str(item.get("call_id", "")), "content": ""}
    chat["content"] = _output_text(output)
    return chat, kept


def stored_messages(items: Sequence[TResponseInputItem]) -> list[dict[str, Any]]:
    """The chat messages to append for ``items``, each with the items it stands for in
    ``metadata[ITEMS_KEY]``; in order, nothing left out."""
    messages: list[dict[str, Any]] = []
    kept: list[list[dict[str, Any]]] = []
    riding: list[dict[str, Any]] = []
    calls_open = False
    for raw in items:
        item = cast(Mapping[str, Any], copy.deepcopy(raw))
        kind = _kind(item)
        if kind == "other":
            riding.append(dict(item))
            continue
        if kind == "function_call":
            call, kept_item = _tool_call(item)
            if calls_open:
                messages[-1]["tool_calls"].append(call)
                kept[-1] += [*riding, kept_item]
                riding = []
                continue
            chat: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        elif kind == "function_call_output":
            chat, kept_item = _tool_output(item)
        else:
            chat, kept_item = _message(item)
        messages.append(chat)
        kept.append([*riding, kept_item])
        riding = []
        calls_open = kind == "function_call"
    if riding:
        if messages:
            kept[-1] += riding
        else:
            messages.append({"role": "assistant", "content": ""})
            kept.append(riding)
    return [
        {**message, "metadata": {ITEMS_KEY: group}}
        for message, group in zip(messages, kept, strict=True)
    ]


# --- stored messages back to items --------------------------------------------------------------


def _restored_part(kept: Mapping[str, Any], chat: object) -> dict[str, Any]:
    part = dict(kept)
    for key, value in kept.items():
        if not _is_moved(value):
            continue
        if isinstance(chat, str):
            part[key] = chat
        elif isinstance(chat, Mapping):
            kind = chat.get("type")
            if kind == "image_url":
                part[key] = (chat.get("image_url") or {}).get("url", "")
            elif kind == "file":
                part[key] = (chat.get("file") or {}).get(key, "")
            else:
                part[key] = chat.get(str(kind), "")
    return part


def _restored(kept: Mapping[str, Any], message: Mapping[str, Any], call_index: int) -> Any:
    item = dict(kept)
    content = message.get("content")
    kind = _kind(kept)
    if kind == "message":
        if _is_moved(kept.get("content")):
            item["content"] = content if isinstance(content, str) else ""
        elif isinstance(kept.get("content"), list):
            parts = kept["content"]
            if isinstance(content, str):
                item["content"] = [_restored_part(part, content) for part in parts]
            elif isinstance(content, list) and len(content) == len(parts):
                item["content"] = [
                    _restored_part(part, chat) for part, chat in zip(parts, content, strict=True)
                ]
    elif kind == "function_call" and _is_moved(kept.get("arguments")):
        calls = message.get("tool_calls") or []
        function = calls[call_index].get("function") or {} if call_index < len(calls) else {}
        item["arguments"] = str(function.get("arguments", ""))
    elif kind == "function_call_output" and _is_moved(kept.get("output")):
        item["output"] = content if isinstance(content, str) else _output_text(content)
    return item


def restored_items(
    message: Mapping[str, Any], metadata: Mapping[str, Any] | None
) -> list[TResponseInputItem]:
    """The items a stored message stands for: exactly as added when it carries them
    (``metadata[ITEMS_KEY]``), else its chat form as items (``message_items``)."""
    kept = None if metadata is None else metadata.get(ITEMS_KEY)
    if not isinstance(kept, list) or not all(isinstance(item, Mapping) for item in kept):
        return message_items(message)
    items: list[TResponseInputItem] = []
    calls = 0
    for item in kept:
        items.append(cast(TResponseInputItem, _restored(item, message, calls)))
        if _kind(item) == "function_call":
            calls += 1
    return items


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


def _input_part(part: Mapping[str, Any]) -> dict[str, Any] | None:
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
        return {"type": "input_file", **file}
    if kind == "input_audio":
        return {"type": "input_audio", "input_audio": part.get("input_audio")}
    return None


def message_items(message: Mapping[str, Any]) -> list[TResponseInputItem]:
    """The items of a chat message stored without them (by another client, or the summary):
    an assistant message with text and tool calls is several items, its text first."""
    role = message.get("role")
    content = message.get("content")
    items: list[dict[str, Any]] = []
    if role == "tool":
        items.append(
            {
                "type": "function_call_output",
                "call_id": str(message.get("tool_call_id", "")),
                "output": _text(content),
            }
        )
    elif role == "assistant":
        text = _text(content)
        if text:
            items.append({"role": "assistant", "content": text})
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            items.append(
                {
                    "type": "function_call",
                    "call_id": str(call.get("id", "")),
                    "name": str(function.get("name", "")),
                    "arguments": str(function.get("arguments", "")),
                }
            )
    elif role in ("user", "system", "developer"):
        if isinstance(content, list):
            parts = [_input_part(part) for part in content if isinstance(part, Mapping)]
            items.append({"role": role, "content": [part for part in parts if part is not None]})
        else:
            items.append({"role": role, "content": _text(content)})
    return cast(list[TResponseInputItem], items)


def input_items(
    messages: Sequence[Mapping[str, Any]], system_prompt_addition: str = ""
) -> list[TResponseInputItem]:
    """Chat messages as items (``message_items``), after the system-prompt addition as a
    system message when given."""
    items: list[TResponseInputItem] = []
    if system_prompt_addition:
        items.append(
            cast(TResponseInputItem, {"role": "system", "content": system_prompt_addition})
        )
    for message in messages:
        items.extend(message_items(message))
    return items
