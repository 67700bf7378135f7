"""Messages an append must refuse (with the status it answers) and parts it must store as sent."""

from __future__ import annotations

from typing import Any

TOOL_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}

BAD_MESSAGES: list[tuple[str, dict[str, Any], int]] = [
    ("unknown role", {"role": "robot", "content": "x"}, 422),
    ("missing role", {"content": "x"}, 422),
    ("tool without tool_call_id", {"role": "tool", "content": "x"}, 422),
    ("tool with empty tool_call_id", {"role": "tool", "tool_call_id": "", "content": "x"}, 422),
    ("NUL in content", {"role": "user", "content": "a\x00b"}, 422),
    ("NUL in a content part", {"role": "user", "content": [{"type": "text", "text": "\x00"}]}, 422),
    ("NUL in metadata", {"role": "user", "content": "ok", "metadata": {"k": "\x00"}}, 422),
    (
        "NUL in tool arguments",
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "\x00"}}
            ],
        },
        422,
    ),
    ("null content for a user", {"role": "user", "content": None}, 422),
    ("missing content for a user", {"role": "user"}, 422),
    (
        "tool_calls on a user message",
        {"role": "user", "content": "x", "tool_calls": [TOOL_CALL]},
        422,
    ),
    ("content of a wrong type", {"role": "user", "content": 42}, 422),
    (
        "tool call without id",
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"type": "function", "function": TOOL_CALL["function"]}],
        },
        422,
    ),
    ("metadata not an object", {"role": "user", "content": "x", "metadata": [1]}, 422),
    ("oversized message", {"role": "user", "content": "x" * (1024 * 1024 + 1)}, 413),
    # Content parts, by role, as the chat-completions request format defines them.
    ("an unknown part type", {"role": "user", "content": [{"type": "bogus"}]}, 422),
    ("a text part without text", {"role": "user", "content": [{"type": "text"}]}, 422),
    (
        "a text part whose text is not a string",
        {"role": "user", "content": [{"type": "text", "text": 3}]},
        422,
    ),
    ("an empty list of parts", {"role": "user", "content": []}, 422),
    ("a part that is not an object", {"role": "user", "content": ["hello"]}, 422),
    (
        "a part with an unknown field",
        {"role": "user", "content": [{"type": "text", "text": "a", "x": 1}]},
        422,
    ),
    (
        "an image part in a system message",
        {
            "role": "system",
            "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
        },
        422,
    ),
    (
        "an image part in a tool message",
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
        },
        422,
    ),
    (
        "an image part in an assistant message",
        {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]},
        422,
    ),
    (
        "an image part without its url",
        {"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
        422,
    ),
    (
        "a refusal part from a user",
        {"role": "user", "content": [{"type": "refusal", "refusal": "no"}]},
        422,
    ),
    (
        "an audio part of an unknown format",
        {
            "role": "user",
            "content": [{"type": "input_audio", "input_audio": {"data": "AA", "format": "ogg"}}],
        },
        422,
    ),
    (
        "a file part naming no file",
        {"role": "user", "content": [{"type": "file", "file": {"filename": "a.pdf"}}]},
        422,
    ),
]

GOOD_PARTS: list[tuple[str, dict[str, Any]]] = [
    (
        "text parts from a system message",
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
    ),
    (
        "text and image from a user",
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is on this screenshot?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://example.com/a.png", "detail": "low"},
                },
            ],
        },
    ),
    (
        "audio and a file from a user",
        {
            "role": "user",
            "content": [
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-abc123"}},
            ],
        },
    ),
    (
        "a refusal from the assistant",
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot."}]},
    ),
    (
        "text parts from a tool",
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "42"}]},
    ),
]
