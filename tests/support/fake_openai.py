"""A local OpenAI-compatible HTTP server for tests: scripted chat replies, strict request checks.

Owns serving ``POST /v1/chat/completions``, ``POST /v1/embeddings`` and (through
``fake_responses``) ``POST /v1/responses`` on a free loopback port
from a background thread, replying from queues of scripted replies, recording every request, and
rejecting (400) request bodies that a strict OpenAI server would reject. Embeddings are a
deterministic bag of words (similar texts get similar vectors); it never generates text and never
leaves loopback.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, cast

import pytest


@dataclass(frozen=True, slots=True)
class ToolCallReply:
    """The model calls a function with ``arguments``, any string (valid JSON or not).

    ``name`` defaults to the function forced by the request's ``tool_choice`` (else its first tool).
    """

    arguments: str
    name: str | None = None
    content: str | None = None
    prompt_tokens: int = 11
    completion_tokens: int = 7
    reasoning: str | None = None
    """Responses API only: a reasoning item with this summary comes first in the output."""


@dataclass(frozen=True, slots=True)
class TextReply:
    """The model answers in plain text and calls no tool."""

    content: str
    prompt_tokens: int = 11
    completion_tokens: int = 7
    reasoning: str | None = None
    """Responses API only: a reasoning item with this summary comes first in the output."""


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error with OpenAI's error body; ``retry_after_s`` sets ``retry-after-ms``."""

    status: int
    message: str | None = None
    type: str | None = None
    code: str | None = None
    retry_after_s: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RawReply:
    """Exactly these bytes, for responses that are not a well-formed completion."""

    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass(frozen=True, slots=True)
class DelayedReply:
    """Wait ``seconds`` (longer than the client's timeout, to provoke one), then send ``then``."""

    seconds: float
    then: ToolCallReply | TextReply | ErrorReply | RawReply = TextReply("late")


@dataclass(frozen=True, slots=True)
class DynamicReply:
    """A reply computed from the request: ``respond(body)`` returns what to send (a scripted
    model that reads its prompt, such as the adversary of the retention evaluation)."""

    respond: Callable[[Mapping[str, Any]], ToolCallReply | TextReply | ErrorReply | RawReply]


Reply = ToolCallReply | TextReply | ErrorReply | RawReply | DelayedReply | DynamicReply


@dataclass(frozen=True, slots=True)
class EmbeddingReply:
    """The computed embeddings, but ``size`` floats each instead of what was asked for: a
    server that ignores ``dimensions`` or serves another model."""

    size: int


EmbeddingScript = EmbeddingReply | ErrorReply | RawReply


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received. ``body`` is the parsed JSON, or ``None`` when it was not JSON."""

    method: str
    path: str
    headers: Mapping[str, str]
    raw: bytes
    body: Any
    status: int


_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TOOL_CHOICE_MODES = frozenset({"none", "auto", "required"})
# OpenAI rejects message fields it does not know ("Additional properties are not allowed"), which
# is what catches internal bookkeeping leaking into an assembled context.
_MESSAGE_KEYS: Mapping[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset(
        {"role", "content", "name", "tool_calls", "function_call", "refusal", "audio"}
    ),
    "tool": frozenset({"role", "content", "tool_call_id"}),
    "function": frozenset({"role", "content", "name"}),
}
_ROLES = frozenset(_MESSAGE_KEYS)
_TOOL_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_CALL_KEYS = frozenset({"name", "arguments"})


class InvalidChatRequestError(Exception):
    """Why a strict server would answer 400, with the offending ``param`` path."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


# Content parts each role may send, with the fields each part type requires (string-valued
# unless an object is named): what the chat-completions API accepts, and nothing more.
_PART_FIELDS: Mapping[str, Mapping[str, str]] = {
    "text": {"text": "string"},
    "refusal": {"refusal": "string"},
    "image_url": {"image_url": "object"},
    "input_audio": {"input_audio": "object"},
    "file": {"file": "object"},
}
_PARTS_BY_ROLE: Mapping[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "developer": frozenset({"text"}),
    "user": frozenset({"text", "image_url", "input_audio", "file"}),
    "assistant": frozenset({"text", "refusal"}),
    "tool": frozenset({"text"}),
    "function": frozenset({"text"}),
}


def _check_part(part: object, role: str, where: str) -> None:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise InvalidChatRequestError(f"Invalid type for '{where}': expected an object.", where)
    kind = part["type"]
    if kind not in _PARTS_BY_ROLE[role]:
        raise InvalidChatRequestError(
            f"Invalid value: '{kind}'. Supported values are: "
            f"{', '.join(sorted(_PARTS_BY_ROLE[role]))}. - '{where}.type'",
            f"{where}.type",
        )
    fields = _PART_FIELDS[kind]
    _check_keys(part, frozenset({"type", *fields}), where)
    for name, expected in fields.items():
        value = part.get(name)
        if not isinstance(value, str if expected == "string" else dict):
            raise InvalidChatRequestError(
                f"Missing required parameter: '{where}.{name}'.", f"{where}.{name}"
            )
    if kind == "image_url" and not isinstance(part["image_url"].get("url"), str):
        raise InvalidChatRequestError(
            f"Missing required parameter: '{where}.image_url.url'.", f"{where}.image_url.url"
        )


def _check_content(value: object, param: str, role: str, *, nullable: bool) -> None:
    if value is None:
        if nullable:
            return
        raise InvalidChatRequestError(f"Missing required parameter: '{param}'.", param)
    if isinstance(value, str):
        return
    if isinstance(value, list) and value:
        for index, part in enumerate(value):
            _check_part(part, role, f"{param}[{index}]")
        return
    raise InvalidChatRequestError(
        f"Invalid type for '{param}': expected a string or an array of content parts.", param
    )


def _check_keys(value: Mapping[str, object], allowed: frozenset[str], param: str) -> None:
    unexpected = sorted(set(value) - allowed)
    if unexpected:
        raise InvalidChatRequestError(
            f"Additional properties are not allowed ({', '.join(map(repr, unexpected))} "
            f"was unexpected) - '{param}'",
            param,
        )


def _tool_call_ids(tool_calls: object, param: str) -> list[str]:
    if not isinstance(tool_calls, list) or not tool_calls:
        raise InvalidChatRequestError(f"Invalid '{param}': expected a non-empty array.", param)
    ids: list[str] = []
    for index, call in enumerate(tool_calls):
        where = f"{param}[{index}]"
        if not isinstance(call, dict):
            raise InvalidChatRequestError(f"Invalid type for '{where}': expected an object.", where)
        _check_keys(call, _TOOL_CALL_KEYS, where)
        call_id = call.get("id")
        function = call.get("function")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidChatRequestError(f"Missing required parameter: '{where}.id'.", where)
        if call.get("type") != "function":
            raise InvalidChatRequestError(f"Invalid value for '{where}.type'.", f"{where}.type")
        if (
            not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            raise InvalidChatRequestError(
                f"Invalid '{where}.function': expected 'name' and 'arguments' strings.",
                f"{where}.function",
            )
        _check_keys(function, _FUNCTION_CALL_KEYS, f"{where}.function")
        if call_id in ids:
            raise InvalidChatRequestError(f"Duplicate tool call id '{call_id}'.", where)
        ids.append(call_id)
    return ids


def _check_message_shape(message: object, param: str) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise InvalidChatRequestError(f"Invalid type for '{param}': expected an object.", param)
    role = message.get("role")
    if role not in _ROLES:
        raise InvalidChatRequestError(
            f"Invalid value for '{param}.role': {role!r} is not one of {sorted(_ROLES)}.",
            f"{param}.role",
        )
    _check_keys(message, _MESSAGE_KEYS[role], param)
    if "name" in message and not isinstance(message["name"], str):
        raise InvalidChatRequestError(f"Invalid type for '{param}.name'.", f"{param}.name")
    content = message.get("content")
    if role == "assistant":
        has_calls = message.get("tool_calls") is not None or message.get("function_call")
        _check_content(content, f"{param}.content", role, nullable=bool(has_calls))
    elif role == "function":
        if not isinstance(message.get("name"), str):
            raise InvalidChatRequestError(
                f"Missing required parameter: '{param}.name'.", f"{param}.name"
            )
        _check_content(content, f"{param}.content", role, nullable=True)
    else:
        _check_content(content, f"{param}.content", role, nullable=False)
    if role == "tool" and not (
        isinstance(message.get("tool_call_id"), str) and message["tool_call_id"]
    ):
        raise InvalidChatRequestError(
            f"Missing required parameter: '{param}.tool_call_id'.", f"{param}.tool_call_id"
        )
    return cast(dict[str, Any], message)


def _check_messages(messages: object) -> None:
    if not isinstance(messages, list) or not messages:
        raise InvalidChatRequestError("Invalid 'messages': expected a non-empty array.", "messages")
    # Ids of the newest assistant tool calls still owed an answer. A strict server wants every
    # answer directly after its call, before any other message, and no answer without a call.
    pending: list[str] = []
    for index, raw_message in enumerate(messages):
        param = f"messages[{index}]"
        message = _check_message_shape(raw_message, param)
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if call_id not in pending:
                raise InvalidChatRequestError(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (tool_call_id {call_id!r}).",
                    f"{param}.role",
                )
            pending.remove(call_id)
            continue
        if pending:
            raise InvalidChatRequestError(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}",
                param,
            )
        if role == "assistant" and message.get("tool_calls") is not None:
            pending = _tool_call_ids(message["tool_calls"], f"{param}.tool_calls")
    if pending:
        raise InvalidChatRequestError(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}",
            "messages",
        )


def _check_tools(body: Mapping[str, Any]) -> None:
    tools = body.get("tools")
    names: list[str] = []
    if tools is not None:
        if not isinstance(tools, list) or not tools:
            raise InvalidChatRequestError("Invalid 'tools': expected a non-empty array.", "tools")
        for index, tool in enumerate(tools):
            where = f"tools[{index}]"
            function = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(tool, dict) or tool.get("type") != "function":
                raise InvalidChatRequestError(f"Invalid value for '{where}.type'.", where)
            if not isinstance(function, dict):
                raise InvalidChatRequestError(
                    f"Missing required parameter: '{where}.function'.", f"{where}.function"
                )
            name = function.get("name")
            if not isinstance(name, str) or not _FUNCTION_NAME.match(name):
                raise InvalidChatRequestError(
                    f"Invalid '{where}.function.name': {name!r}.", f"{where}.function.name"
                )
            if "parameters" in function and not isinstance(function["parameters"], dict):
                raise InvalidChatRequestError(
                    f"Invalid type for '{where}.function.parameters': expected an object.",
                    f"{where}.function.parameters",
                )
            names.append(name)
    choice = body.get("tool_choice")
    if choice is None:
        return
    if tools is None:
        raise InvalidChatRequestError(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
            "tool_choice",
        )
    if isinstance(choice, str) and choice in _TOOL_CHOICE_MODES:
        return
    forced = choice.get("function") if isinstance(choice, dict) else None
    if (
        not isinstance(choice, dict)
        or choice.get("type") != "function"
        or not isinstance(forced, dict)
    ):
        raise InvalidChatRequestError("Invalid value for 'tool_choice'.", "tool_choice")
    if forced.get("name") not in names:
        raise InvalidChatRequestError(
            f"Invalid value for 'tool_choice': no function named {forced.get('name')!r} in "
            "'tools'.",
            "tool_choice",
        )


def check_chat_request(body: object) -> None:
    """Raise ``InvalidChatRequestError`` if a strict server would reject this chat request body."""
    if not isinstance(body, dict):
        raise InvalidChatRequestError("The request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidChatRequestError("Missing required parameter: 'model'.", "model")
    _check_messages(body.get("messages"))
    _check_tools(body)
    temperature = body.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        raise InvalidChatRequestError("Invalid 'temperature': expected 0 to 2.", "temperature")
    if body.get("stream"):
        raise InvalidChatRequestError("Streaming is not supported by this test server.", "stream")


_EMBEDDING_KEYS = frozenset({"model", "input", "dimensions", "encoding_format", "user"})
MAX_EMBEDDING_INPUTS = 2048


def check_embeddings_request(body: object, native_dim: int) -> None:
    """Raise ``InvalidChatRequestError`` if a strict server would reject this embeddings body.

    Stricter than OpenAI in one way: inputs given as token arrays are refused too (the service
    only ever sends text).
    """
    if not isinstance(body, dict):
        raise InvalidChatRequestError("The request body must be a JSON object.")
    unknown = sorted(set(body) - _EMBEDDING_KEYS)
    if unknown:
        raise InvalidChatRequestError(
            f"Unrecognized request argument supplied: {', '.join(unknown)}", unknown[0]
        )
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidChatRequestError("Missing required parameter: 'model'.", "model")
    inputs = body.get("input")
    if isinstance(inputs, str):
        inputs = [inputs]
    if (
        not isinstance(inputs, list)
        or not 1 <= len(inputs) <= MAX_EMBEDDING_INPUTS
        or not all(isinstance(item, str) and item for item in inputs)
    ):
        raise InvalidChatRequestError(
            "'input' must be a non-empty string or an array of 1 to 2048 non-empty strings.",
            "input",
        )
    dimensions = body.get("dimensions")
    if "dimensions" in body and (
        isinstance(dimensions, bool)
        or not isinstance(dimensions, int)
        or not 1 <= dimensions <= native_dim
    ):
        raise InvalidChatRequestError(
            f"Invalid 'dimensions': expected an integer from 1 to {native_dim}.", "dimensions"
        )
    if body.get("encoding_format", "float") not in ("float", "base64"):
        raise InvalidChatRequestError(
            "Invalid 'encoding_format': expected 'float' or 'base64'.", "encoding_format"
        )


def bag_of_words_vector(text: str, size: int) -> list[float]:
    """A unit vector: the sum of one pseudo-random direction per lower-cased word."""
    total = [0.0] * size
    for word in re.findall(r"\w+", text.lower()):
        stream = b""
        counter = 0
        while len(stream) < 4 * size:
            stream += hashlib.sha256(f"{word}:{counter}".encode()).digest()
            counter += 1
        for index, (raw,) in enumerate(struct.iter_unpack("<i", stream[: 4 * size])):
            total[index] += raw / 2**31
    norm = math.sqrt(sum(value * value for value in total)) or 1.0
    return [value / norm for value in total]


_DEFAULT_ERRORS: Mapping[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to do this.", "invalid_request_error", None),
    404: ("The model does not exist.", "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests.", "requests", "rate_limit_exceeded"),
}


@dataclass(frozen=True, slots=True)
class _Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def _json_response(status: int, payload: object, **headers: str) -> _Response:
    return _Response(status, json.dumps(payload).encode(), headers=headers)


def _error_response(
    status: int,
    message: str,
    *,
    error_type: str,
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> _Response:
    error = {"message": message, "type": error_type, "param": param, "code": code}
    return _json_response(status, {"error": error}, **dict(headers or {}))


def _forced_name(body: Mapping[str, Any]) -> str:
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return str(choice["function"].get("name"))
    tools = body.get("tools") or []
    if tools and isinstance(tools[0], dict) and isinstance(tools[0].get("function"), dict):
        return str(tools[0]["function"].get("name"))
    return "tool"


def _completion(
    body: Mapping[str, Any],
    number: int,
    message: Mapping[str, object],
    finish_reason: str,
    prompt_tokens: int,
    completion_tokens: int,
) -> _Response:
    return _json_response(
        200,
        {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "refusal": None, **message},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


def _render(reply: Reply, body: Mapping[str, Any], number: int) -> _Response:
    if isinstance(reply, DynamicReply):
        return _render(reply.respond(body), body, number)
    if isinstance(reply, DelayedReply):
        inner = _render(reply.then, body, number)
        return _Response(inner.status, inner.body, inner.content_type, inner.headers, reply.seconds)
    if isinstance(reply, ToolCallReply):
        call = {
            "id": f"call_fake_{number}",
            "type": "function",
            "function": {"name": reply.name or _forced_name(body), "arguments": reply.arguments},
        }
        return _completion(
            body,
            number,
            {"content": reply.content, "tool_calls": [call]},
            "tool_calls",
            reply.prompt_tokens,
            reply.completion_tokens,
        )
    if isinstance(reply, TextReply):
        return _completion(
            body,
            number,
            {"content": reply.content},
            "stop",
            reply.prompt_tokens,
            reply.completion_tokens,
        )
    if isinstance(reply, ErrorReply):
        message, error_type, code = _DEFAULT_ERRORS.get(
            reply.status,
            ("The server had an error while processing your request.", "server_error", None),
        )
        headers = dict(reply.headers)
        if reply.retry_after_s is not None:
            headers["retry-after-ms"] = str(round(reply.retry_after_s * 1000))
        return _error_response(
            reply.status,
            reply.message or message,
            error_type=reply.type or error_type,
            code=reply.code if reply.code is not None else code,
            headers=headers,
        )
    return _Response(reply.status, reply.body, reply.content_type)


class FakeOpenAI:
    """The server and its script. Use as a context manager, or through the ``fake_openai`` fixture.

    Replies are taken from the queue in order, one per chat request that passes validation; when
    the queue is empty, ``default_reply`` is sent. Requests that fail validation get a 400 and do
    not consume a reply.
    """

    def __init__(
        self, *, default_reply: Reply = TextReply("ok"), embedding_dim: int = 1536
    ) -> None:
        self.default_reply: Reply = default_reply
        # The size of every model's own vectors; a request's ``dimensions`` may ask for fewer.
        self.embedding_dim = embedding_dim
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self._embedding_replies: deque[EmbeddingScript] = deque()
        self._requests: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def push(self, *replies: Reply) -> None:
        """Append replies to the queue."""
        with self._lock:
            self._replies.extend(replies)

    def script(self, *replies: Reply) -> None:
        """Replace the queue with these replies."""
        with self._lock:
            self._replies = deque(replies)

    def push_embeddings(self, *replies: EmbeddingScript) -> None:
        """Script the next embeddings responses; once used up, embeddings are computed."""
        with self._lock:
            self._embedding_replies.extend(replies)

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order, including rejected ones."""
        with self._lock:
            return list(self._requests)

    @property
    def errors(self) -> list[str]:
        """Failures inside the server itself; a test using it should expect none."""
        with self._lock:
            return list(self._errors)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake OpenAI server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("the fake OpenAI server is already running")
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            # Stopping waits for one poll; a short one keeps per-test teardown fast.
            kwargs={"poll_interval": 0.01},
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving; replies still being delayed are cut short so their threads can end."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _respond(self, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> _Response:
        body: Any = None
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        response = self._decide(method, path, headers, raw, body)
        with self._lock:
            self._requests.append(
                RecordedRequest(method, path, dict(headers), raw, body, response.status)
            )
        return response

    def _decide(
        self, method: str, path: str, headers: Mapping[str, str], raw: bytes, body: Any
    ) -> _Response:
        if method == "POST" and path.rstrip("/") == "/v1/embeddings":
            return self._embeddings(headers, raw, body)
        if method == "POST" and path.rstrip("/") == "/v1/responses":
            return self._responses(headers, raw, body)
        if method != "POST" or path.rstrip("/") != "/v1/chat/completions":
            return _error_response(
                404, f"Unknown request URL: {method} {path}.", error_type="invalid_request_error"
            )
        authorization = headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or not authorization[7:].strip():
            return _error_response(
                401,
                "You didn't provide an API key.",
                error_type="invalid_request_error",
                code="invalid_api_key",
            )
        if body is None and raw:
            return _error_response(
                400,
                "We could not parse the JSON body of your request.",
                error_type="invalid_request_error",
            )
        try:
            check_chat_request(body)
        except InvalidChatRequestError as error:
            return _error_response(
                400, error.message, error_type="invalid_request_error", param=error.param
            )
        with self._lock:
            reply = self._replies.popleft() if self._replies else self.default_reply
            number = len(self._requests) + 1
        return _render(reply, body, number)

    def _embeddings(self, headers: Mapping[str, str], raw: bytes, body: Any) -> _Response:
        authorization = headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or not authorization[7:].strip():
            return _error_response(
                401,
                "You didn't provide an API key.",
                error_type="invalid_request_error",
                code="invalid_api_key",
            )
        if body is None and raw:
            return _error_response(
                400,
                "We could not parse the JSON body of your request.",
                error_type="invalid_request_error",
            )
        try:
            check_embeddings_request(body, self.embedding_dim)
        except InvalidChatRequestError as error:
            return _error_response(
                400, error.message, error_type="invalid_request_error", param=error.param
            )
        with self._lock:
            scripted = self._embedding_replies.popleft() if self._embedding_replies else None
        if isinstance(scripted, ErrorReply | RawReply):
            return _render(scripted, body, 0)
        inputs = [body["input"]] if isinstance(body["input"], str) else body["input"]
        size = body.get("dimensions", self.embedding_dim) if scripted is None else scripted.size
        vectors = [bag_of_words_vector(text, size) for text in inputs]
        as_base64 = body.get("encoding_format") == "base64"
        tokens = sum(len(text.split()) for text in inputs)
        return _json_response(
            200,
            {
                "object": "list",
                "data": [
                    {
                        "object": "embedding",
                        "index": index,
                        "embedding": base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()
                        if as_base64
                        else v,
                    }
                    for index, v in enumerate(vectors)
                ],
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _responses(self, headers: Mapping[str, str], raw: bytes, body: Any) -> _Response:
        """The Responses API (``tests.support.fake_responses``), from the same script."""
        from tests.support.fake_responses import (
            check_responses_request,
            response_object,
            streamed_events,
        )

        authorization = headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or not authorization[7:].strip():
            return _error_response(
                401,
                "You didn't provide an API key.",
                error_type="invalid_request_error",
                code="invalid_api_key",
            )
        try:
            check_responses_request(body)
        except InvalidChatRequestError as error:
            return _error_response(
                400, error.message, error_type="invalid_request_error", param=error.param
            )
        with self._lock:
            reply = self._replies.popleft() if self._replies else self.default_reply
            number = len(self._requests) + 1
        if isinstance(reply, TextReply | ToolCallReply):
            response = response_object(reply, body, number)
            if body.get("stream"):
                return _Response(200, streamed_events(response), "text/event-stream")
            return _json_response(200, response)
        return _render(reply, body, number)

    def _record_error(self, message: str) -> None:
        with self._lock:
            self._errors.append(message)


class _Server(ThreadingHTTPServer):
    # Join handler threads on close, so no thread outlives the test that started the server.
    daemon_threads = False
    block_on_close = True

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError | TimeoutError):
            self.fake._record_error(repr(error))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A client that connects and never sends would otherwise hold a thread until the join.
    timeout = 5.0

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def _handle(self) -> None:
        fake = cast(_Server, self.server).fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {key.lower(): value for key, value in self.headers.items()}
        try:
            response = fake._respond(self.command, self.path, headers, raw)
        except Exception as error:
            fake._record_error(repr(error))
            response = _error_response(500, "fake server failure", error_type="server_error")
        if response.delay_s and fake._stopping.wait(response.delay_s):
            self.close_connection = True
            return
        # One request per connection: idle keep-alive threads would delay the join at stop.
        self.close_connection = True
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
            self.send_header("Connection", "close")
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(response.body)
        except (ConnectionError, TimeoutError):
            # The client gave up first (its timeout is the point of a delayed reply).
            return

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running ``FakeOpenAI``, fresh per test; fails the test if the server itself broke."""
    with FakeOpenAI() as fake:
        yield fake
    if fake.errors:
        pytest.fail(f"the fake OpenAI server failed: {fake.errors}")
