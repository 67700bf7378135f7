"""OpenViking's messages in ``parts`` format, and their mapping to and from OpenAI messages.

The one mapping of OpenViking's format: the compatible API and the workspace importer both store
through it, so a message imported and the same message sent through ``/api/v1`` are stored
alike. Inbound, one OpenViking message becomes the OpenAI messages workmem stores: its text,
image and context parts the content, its tool parts an assistant tool call each answered by a
``tool`` result, with call ids unique within the agent session (``ToolCallIds``). What OpenAI's
format has no field for rides along in every stored message's ``metadata["openviking"]``: the
message's labels (its id in the store it came from, peer and turn labels) and, on the message
that holds its content, the layout of its parts (kinds, tool statuses and ids as sent), so any
stored message reads back as its parts. Pure: no I/O, no database, no web framework.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.compat.openviking.ids import message_id
from app.sessions.records import StoredMessage
from app.sessions.schemas import StorableMoment

METADATA_KEY: Final = "openviking"
"""The key under a stored message's ``metadata`` that holds what the OpenAI format cannot."""
MESSAGE_FIELDS: Final = ("peer_id", "turn_id", "message_kind", "source_message_ids")
"""OpenViking message fields kept beside the message and given back as they were sent."""
MESSAGE_ID: Final = "message_id"
"""The label under which a message's id in the store it came from (its ``id``) is kept."""


@dataclass(slots=True)
class ToolCallIds:
    """Tool-call ids of one agent session. OpenViking's ``tool_id`` is the client's and may
    repeat (or be empty); model APIs want each call id once per conversation, so a repeat gets
    a suffix. The id as sent stays in the message's part layout."""

    seen: set[str] = field(default_factory=set)

    def assign(self, tool_id: str, fallback: str) -> str:
        base = tool_id or fallback
        candidate, number = base, 2
        while candidate in self.seen:
            candidate, number = f"{base}_{number}", number + 1
        self.seen.add(candidate)
        return candidate


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ImageUrl(BaseModel):
    url: str = Field(min_length=1)
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(BaseModel):
    type: Literal["image_url"]
    image_url: ImageUrl


class ContextPart(BaseModel):
    type: Literal["context"]
    uri: str = ""
    context_type: Literal["memory", "resource", "skill"] = "memory"
    abstract: str = ""


class ToolPart(BaseModel):
    """One tool call together with its result. Fields beyond these (``duration_ms``, the
    ``tool_output_*`` bookkeeping) are kept as sent."""

    model_config = ConfigDict(extra="allow")

    type: Literal["tool"]
    tool_id: str = ""
    tool_name: str = ""
    tool_uri: str = ""
    skill_uri: str = ""
    tool_input: dict[str, Any] | None = None
    tool_output: str = ""
    tool_status: str = "pending"


Part = Annotated[TextPart | ImagePart | ContextPart | ToolPart, Field(discriminator="type")]
NonToolPart = TextPart | ImagePart | ContextPart


class MessageIn(BaseModel):
    """A message as OpenViking's clients send it: ``content`` text, or ``parts`` (which win)."""

    role: Literal["user", "assistant"]
    id: str | None = Field(
        default=None,
        max_length=256,
        description="the message's id in the store it came from (kept, as message_id)",
    )
    content: str | None = None
    parts: list[Part] | None = None
    created_at: StorableMoment = None
    peer_id: str | None = Field(default=None, max_length=256)
    turn_id: str | None = Field(default=None, max_length=256)
    message_kind: Literal["user_query", "assistant_step", "tool_transport", "checkpoint"] | None = (
        None
    )
    source_message_ids: list[str] | None = None

    @model_validator(mode="after")
    def _has_content(self) -> MessageIn:
        if not self.parts and self.content is None:
            raise ValueError("either 'content' or a non-empty 'parts' list must be given")
        return self


def _content_part(part: NonToolPart, role: str) -> dict[str, Any]:
    """A non-tool part as one chat-completions content part; what a role cannot carry (an
    assistant's image, any context reference) is sent as text the model can read."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        if role == "user":
            return {"type": "image_url", "image_url": part.image_url.model_dump(exclude_none=True)}
        return {"type": "text", "text": f"[image: {part.image_url.url}]"}
    return {
        "type": "text",
        "text": f"[{part.context_type} context: {part.uri}] {part.abstract}".rstrip(),
    }


def _layout_entry(part: NonToolPart | ToolPart, role: str) -> dict[str, Any]:
    """What reading back needs of a part beyond its content part or tool call: the kind alone
    when the content part is the part itself, else the part without the fields stored there."""
    if isinstance(part, TextPart) or (isinstance(part, ImagePart) and role == "user"):
        return {"type": part.type}
    if isinstance(part, ToolPart):
        excluded = {"tool_output"} if part.tool_input is None else {"tool_output", "tool_input"}
        return part.model_dump(exclude=excluded)
    return part.model_dump(exclude_none=True)


def _content(parts: Sequence[NonToolPart], role: str) -> str | list[dict[str, Any]] | None:
    rendered = [_content_part(part, role) for part in parts]
    if not rendered:
        return None
    if len(rendered) == 1 and rendered[0]["type"] == "text":
        return str(rendered[0]["text"])
    return rendered


def _tool_messages(
    tools: Sequence[ToolPart], ids: ToolCallIds
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The tool calls and their results. Call ids must be unique within the agent session and
    names non-empty (OpenViking allows an empty or repeated ``tool_id``): such a call gets an id
    made unique, and the part's own id is given back from the layout."""
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for index, part in enumerate(tools):
        call_id = ids.assign(part.tool_id, f"call_{index}")
        arguments = json.dumps(part.tool_input or {}, ensure_ascii=False)
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": part.tool_name or "tool", "arguments": arguments},
            }
        )
        results.append({"role": "tool", "tool_call_id": call_id, "content": part.tool_output})
    return calls, results


def to_openai(
    message: MessageIn,
    ids: ToolCallIds | None = None,
    *,
    role: str | None = None,
    labels: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The OpenAI messages (with our ``metadata`` and ``created_at``) one message becomes.

    An assistant message is one message (content and tool calls) plus a result per tool part.
    A user message's tool parts cannot be a user's: they become an assistant tool call and its
    results after the user's text, marked as the user's (OpenViking itself splits such a
    message into one per tool part). ``ids``: the agent session's call ids so far (a fresh set
    when left out); ``role`` overrides the message's (an imported ``system`` line); ``labels``
    are kept beside the message's own fields (what an importer read that the API has no field
    for).
    """
    ids = ids if ids is not None else ToolCallIds()
    parts: list[NonToolPart | ToolPart] = (
        list(message.parts)
        if message.parts
        else [TextPart(type="text", text=message.content or "")]
    )
    kept_labels: dict[str, Any] = dict(labels or {})
    if message.id is not None:
        kept_labels[MESSAGE_ID] = message.id
    kept_labels.update(
        (name, getattr(message, name))
        for name in MESSAGE_FIELDS
        if getattr(message, name) is not None
    )
    tools = [part for part in parts if isinstance(part, ToolPart)]
    others = [part for part in parts if not isinstance(part, ToolPart)]
    role = role or message.role

    def stored(
        openai: dict[str, Any], layout: Sequence[NonToolPart | ToolPart], extra: Mapping[str, Any]
    ) -> dict[str, Any]:
        kept: dict[str, Any] = {**kept_labels, **extra}
        if message.parts:
            kept["parts"] = [_layout_entry(part, role) for part in layout]
        return {
            **openai,
            "metadata": {METADATA_KEY: kept} if kept else None,
            "created_at": message.created_at,
        }

    def results(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        metadata = {METADATA_KEY: kept_labels} if kept_labels else None
        return [{**item, "metadata": metadata, "created_at": message.created_at} for item in items]

    calls, answers = _tool_messages(tools, ids)
    if role == "assistant":
        head: dict[str, Any] = {"role": "assistant", "content": _content(others, role)}
        if calls:
            head["tool_calls"] = calls
        return [stored(head, parts, {}), *results(answers)]
    out: list[dict[str, Any]] = []
    if others:
        out.append(stored({"role": role, "content": _content(others, role)}, others, {}))
    if calls:
        call = {"role": "assistant", "content": None, "tool_calls": calls}
        out.append(stored(call, tools, {"role": role}))
        out.extend(results(answers))
    return out


def _text_of(content_part: Mapping[str, Any]) -> dict[str, Any]:
    """A stored content part as an OpenViking part: text and images as they are, anything else
    OpenViking has no part for (a refusal, audio, a file) as text."""
    kind = content_part.get("type")
    if kind == "text":
        return {"type": "text", "text": content_part.get("text", "")}
    if kind == "image_url":
        return {"type": "image_url", "image_url": dict(content_part.get("image_url", {}))}
    if kind == "refusal":
        return {"type": "text", "text": content_part.get("refusal", "")}
    return {"type": "text", "text": f"[{kind}]"}


def _content_parts(content: object) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [part for part in content if isinstance(part, Mapping)]
    return []


def _arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    raw = call.get("function", {}).get("arguments", "")
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def _tool_part(
    call: Mapping[str, Any], results: Mapping[str, str], entry: Mapping[str, Any] | None
) -> dict[str, Any]:
    call_id = str(call.get("id", ""))
    answered = call_id in results
    part: dict[str, Any] = {
        "type": "tool",
        "tool_id": call_id,
        "tool_name": str(call.get("function", {}).get("name", "")),
        "tool_status": "completed" if answered else "pending",
    }
    if entry is not None:
        part.update(entry)
    if "tool_input" not in part:
        part["tool_input"] = _arguments(call)
    part["tool_output"] = results.get(call_id, "")
    return part


def _parts(
    message: Mapping[str, Any],
    layout: Sequence[Mapping[str, Any]] | None,
    results: Mapping[str, str],
) -> list[dict[str, Any]]:
    contents: Iterator[Mapping[str, Any]] = iter(_content_parts(message.get("content")))
    raw_calls = message.get("tool_calls")
    calls: Iterator[Mapping[str, Any]] = iter(raw_calls if isinstance(raw_calls, list) else [])
    if layout is None:
        return [_text_of(part) for part in contents] + [
            _tool_part(call, results, None) for call in calls
        ]
    parts: list[dict[str, Any]] = []
    for entry in layout:
        if entry.get("type") == "tool":
            call = next(calls, None)
            if call is not None:
                parts.append(_tool_part(call, results, entry))
            continue
        # Every non-tool part has one content part; a layout entry that is more than its kind is
        # the part itself (the content part is then only its readable form).
        content_part = next(contents, None)
        if set(entry) != {"type"}:
            parts.append(dict(entry))
        elif content_part is not None:
            parts.append(_text_of(content_part))
    return parts


def _kept(stored: StoredMessage) -> Mapping[str, Any]:
    metadata = stored.metadata or {}
    kept = metadata.get(METADATA_KEY)
    return kept if isinstance(kept, Mapping) else {}


def to_parts(messages: Sequence[StoredMessage]) -> list[dict[str, Any]]:
    """Stored messages (oldest first) as OpenViking messages: an assistant tool call and the
    results right after it read back as one message with a tool part per call; a result with
    no call before it as a user message holding its tool part, as OpenViking transports them."""
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        head = messages[index]
        index += 1
        message = head.message
        results: dict[str, str] = {}
        calls = message.get("tool_calls") if head.role == "assistant" else None
        if isinstance(calls, list):
            pending = {str(call.get("id")) for call in calls if isinstance(call, Mapping)}
            while index < len(messages) and messages[index].role == "tool":
                answer = messages[index].message
                answered = str(answer.get("tool_call_id"))
                if answered not in pending:
                    break
                pending.discard(answered)
                results[answered] = str(answer.get("content") or "")
                index += 1
        kept = _kept(head)
        if head.role == "tool":
            orphan = {
                "type": "tool",
                "tool_id": str(message.get("tool_call_id", "")),
                "tool_name": "",
                "tool_status": "completed",
                "tool_output": str(message.get("content") or ""),
            }
            role, parts = "user", [orphan]
        else:
            layout = kept.get("parts")
            role = str(kept.get("role", head.role))
            parts = _parts(message, layout if isinstance(layout, list) else None, results)
        rendered: dict[str, Any] = {
            "id": message_id(head.seq),
            "role": role,
            "parts": parts,
            "created_at": head.created_at.isoformat(),
        }
        rendered.update({name: kept[name] for name in MESSAGE_FIELDS if name in kept})
        out.append(rendered)
    return out
