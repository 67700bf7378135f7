"""The per-role rules of a message, stated in its JSON schema (what the OpenAPI document shows).

``MessageCreate`` enforces them in its validator; this states the same rules for clients:
a tool message needs a non-empty ``tool_call_id``, only an assistant message carries
``tool_calls`` and may have null ``content`` (then beside at least one tool call), and which
content parts each role may send. Pure: a function of the generated schema, nothing else.
"""

from __future__ import annotations

from typing import Any

PARTS_BY_ROLE: dict[str, tuple[str, ...]] = {
    "system": ("text",),
    "developer": ("text",),
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
    "tool": ("text",),
}
"""Which content parts each role may send (the chat-completions request format)."""


def _content(role: str) -> dict[str, Any]:
    return {
        "anyOf": [
            {"type": "string"},
            {
                "type": "array",
                "minItems": 1,
                "items": {"properties": {"type": {"enum": list(PARTS_BY_ROLE[role])}}},
            },
        ]
    }


def _shape(role: str) -> dict[str, Any]:
    if role == "assistant":
        return {
            "title": "assistant message",
            "properties": {"role": {"const": role}},
            "anyOf": [
                {"required": ["content"], "properties": {"content": _content(role)}},
                {
                    "required": ["tool_calls"],
                    "properties": {
                        "content": {"type": "null"},
                        "tool_calls": {"type": "array", "minItems": 1},
                    },
                },
            ],
        }
    shape: dict[str, Any] = {
        "title": f"{role} message",
        "properties": {
            "role": {"const": role},
            "content": _content(role),
            "tool_calls": {"type": "null"},
        },
        "required": ["role", "content"],
    }
    if role == "tool":
        shape["properties"]["tool_call_id"] = {"type": "string", "minLength": 1}
        shape["required"].append("tool_call_id")
    return shape


def message_shapes(schema: dict[str, Any]) -> None:
    """Add the per-role rules to a message's generated schema (pydantic's
    ``json_schema_extra``): exactly one of the four shapes must hold, beside the fields."""
    schema["oneOf"] = [_shape(role) for role in PARTS_BY_ROLE]
