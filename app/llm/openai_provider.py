"""The ``openai`` chat provider: the official SDK against any OpenAI-compatible endpoint.

Owns the forced-tool chat request, retries with jittered backoff, and the translation of every SDK
exception into the port's errors; no other module sees an SDK exception. Never parses or judges the
tool arguments, and never puts keys, prompts or the server's error text into an error message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import re
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types import CompletionUsage
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionNamedToolChoiceParam,
)
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.shared_params import FunctionDefinition

from app.llm.ports import (
    ModelError,
    PermanentModelError,
    ToolCallOutcome,
    TransientModelError,
    Usage,
)

logger = logging.getLogger(__name__)

# Error codes and types from the server are stable identifiers worth keeping in a message; anything
# else (free text, which may echo a key or the prompt) is left out.
_SAFE_IDENTIFIER = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def backoff_delay(retry_number: int, *, base_s: float, max_s: float, jitter: float) -> float:
    """Seconds to wait before retry ``retry_number`` (0 for the first retry).

    Half of the capped exponential delay is fixed and ``jitter`` (0–1) of the other half is added,
    so retries of many workers spread out without any of them retrying almost at once.
    """
    ceiling = min(max_s, base_s * 2.0 ** min(retry_number, 64))
    return ceiling * (1.0 + jitter) / 2.0


class OpenAIChatModel:
    """A ``ChatModel`` over ``AsyncOpenAI`` chat completions with one forced function tool.

    ``max_retries`` counts retries after the first attempt; only timeouts, connection errors, 429
    and 5xx are retried. ``temperature=None`` leaves the parameter out, for models that reject it.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout_s: float,
        max_retries: int,
        temperature: float | None = 0.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
    ) -> None:
        if not api_key:
            raise ValueError("api_key must not be empty")
        if not model:
            raise ValueError("model must not be empty")
        if not timeout_s > 0:
            raise ValueError("timeout_s must be positive")
        if max_retries < 0:
            raise ValueError("max_retries must not be negative")
        if backoff_base_s < 0 or backoff_max_s < 0:
            raise ValueError("backoff delays must not be negative")
        self._model = model
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._temperature = temperature
        self._backoff_base_s = backoff_base_s
        self._backoff_max_s = backoff_max_s
        # The SDK's own retries are off: it also retries 408, 409 and any status a server marks
        # with `x-should-retry`, and its backoff constants cannot be set per client.
        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0
        )

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self._model!r})"

    @property
    def model(self) -> str:
        return self._model

    async def close(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def call_tool(
        self,
        *,
        system: str,
        user: str,
        tool: Mapping[str, Any],
        timeout_s: float | None = None,
    ) -> ToolCallOutcome:
        """Call the model with ``tool`` forced; see ``ChatModel.call_tool``.

        ``timeout_s`` bounds each attempt (default: the client's); ``ValueError`` means the tool
        definition itself is unusable, which is a bug in the caller, not a model failure.
        """
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError("timeout_s must be positive")
        function = _function_definition(tool)
        retries = 0
        while True:
            try:
                return await self._attempt(system, user, function, timeout_s or self._timeout_s)
            except TransientModelError as error:
                delay = self._retry_delay(retries, error)
                if delay is None:
                    raise
                retries += 1
                logger.warning(
                    "model call failed (%s); retry %d of %d in %.2f s",
                    error,
                    retries,
                    self._max_retries,
                    delay,
                )
                await asyncio.sleep(delay)

    async def _attempt(
        self, system: str, user: str, function: FunctionDefinition, timeout_s: float
    ) -> ToolCallOutcome:
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        tools: list[ChatCompletionFunctionToolParam] = [{"type": "function", "function": function}]
        tool_choice: ChatCompletionNamedToolChoiceParam = {
            "type": "function",
            "function": {"name": function["name"]},
        }
        try:
            completion: object = await self._client.chat.completions.create(
                model=self._model,
                messages=messages,
                tools=tools,
                tool_choice=tool_choice,
                temperature=self._temperature if self._temperature is not None else openai.omit,
                timeout=timeout_s,
            )
        except openai.OpenAIError as error:
            raise _translate(error) from error
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            # The SDK lets a 2xx body that does not decode escape as a plain ValueError.
            raise PermanentModelError(
                "model endpoint returned a body that is not JSON", code="bad_response"
            ) from error
        return self._outcome(completion, function["name"])

    def _retry_delay(self, retries: int, error: TransientModelError) -> float | None:
        """Seconds to wait before the next attempt, or ``None`` to give up now."""
        if retries >= self._max_retries:
            return None
        jitter = random.random()  # noqa: S311 - spreads retries out; no security role
        delay = backoff_delay(
            retries, base_s=self._backoff_base_s, max_s=self._backoff_max_s, jitter=jitter
        )
        if error.retry_after_s is None:
            return delay
        if error.retry_after_s > self._backoff_max_s:
            # The caller re-queues with its own schedule; holding a worker this long helps nobody.
            return None
        return max(delay, error.retry_after_s)

    def _outcome(self, completion: object, tool_name: str) -> ToolCallOutcome:
        # Without strict response validation the SDK builds its models from whatever JSON arrived,
        # so every field is checked here as untrusted data.
        if not isinstance(completion, ChatCompletion):
            raise _bad_response("model endpoint returned something other than a chat completion")
        choices: object = completion.choices
        if not isinstance(choices, list) or not choices:
            raise _bad_response("model response has no choices")
        choice: object = choices[0]
        message: object = choice.message if isinstance(choice, Choice) else None
        if not isinstance(message, ChatCompletionMessage):
            raise _bad_response("model response has no message")
        content: object = message.content
        model: object = completion.model
        return ToolCallOutcome(
            arguments=_arguments_of(message.tool_calls, tool_name),
            text=content if isinstance(content, str) else None,
            usage=_usage_of(completion.usage),
            model=model if isinstance(model, str) and model else self._model,
        )


def _function_definition(tool: Mapping[str, Any]) -> FunctionDefinition:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("the tool definition needs a non-empty string 'name'")
    definition: FunctionDefinition = {"name": name}
    description = tool.get("description")
    if description is not None:
        definition["description"] = str(description)
    parameters = tool.get("parameters")
    if parameters is not None:
        if not isinstance(parameters, Mapping):
            raise ValueError("the tool's 'parameters' must be a JSON schema object")
        definition["parameters"] = dict(parameters)
    if "strict" in tool:
        definition["strict"] = bool(tool["strict"])
    return definition


def _arguments_of(tool_calls: object, tool_name: str) -> str | None:
    if tool_calls is None:
        return None
    if not isinstance(tool_calls, list):
        raise _bad_response("model response has malformed tool calls")
    for call in tool_calls:
        # Some compatible servers omit `type`; a call that names our function is ours either way.
        if not isinstance(call, ChatCompletionMessageFunctionToolCall) or call.type not in (
            "function",
            None,
        ):
            continue
        function: object = call.function
        if not isinstance(function, Function) or function.name != tool_name:
            continue
        arguments: object = function.arguments
        if isinstance(arguments, str):
            return arguments
        if isinstance(arguments, dict | list):
            # Some compatible servers send the arguments already decoded.
            return json.dumps(arguments, ensure_ascii=False)
        raise _bad_response("model tool call has arguments that are not a string")
    return None


def _usage_of(usage: object) -> Usage:
    if not isinstance(usage, CompletionUsage):
        return Usage(calls=1)
    return Usage(
        prompt_tokens=_count(usage.prompt_tokens),
        completion_tokens=_count(usage.completion_tokens),
        calls=1,
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _bad_response(message: str) -> PermanentModelError:
    return PermanentModelError(message, code="bad_response")


def _safe_detail(error: openai.APIStatusError) -> str:
    for candidate in (error.code, error.type):
        if isinstance(candidate, str) and _SAFE_IDENTIFIER.match(candidate):
            return f": {candidate}"
    return ""


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _translate(error: openai.OpenAIError) -> ModelError:
    """The one place an SDK exception becomes a port error."""
    if isinstance(error, openai.APITimeoutError):
        return TransientModelError("model request timed out", code="timeout")
    if isinstance(error, openai.APIConnectionError):
        return TransientModelError("could not reach the model endpoint", code="connection_error")
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        detail = _safe_detail(error)
        if status == 429:
            return TransientModelError(
                f"model endpoint is rate limiting (HTTP 429{detail})",
                code="rate_limited",
                status=status,
                retry_after_s=_retry_after_s(error.response.headers),
            )
        if status >= 500:
            return TransientModelError(
                f"model endpoint failed (HTTP {status}{detail})",
                code="server_error",
                status=status,
                retry_after_s=_retry_after_s(error.response.headers),
            )
        return PermanentModelError(
            f"model endpoint rejected the call (HTTP {status}{detail})",
            code="client_error",
            status=status,
        )
    # Nothing else is raised by a non-streaming chat call today; a new SDK error class is
    # permanent until someone decides otherwise.
    return PermanentModelError(f"model call failed ({type(error).__name__})")
