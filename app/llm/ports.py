"""The chat-model port: one call with one forced function tool, its outcome, usage and errors.

Owns the contract that services code against and that providers implement. Never imports an SDK
or does I/O: translating a vendor's responses and exceptions into these types is the provider's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens billed and model calls made; adds up over the calls that produced one archive."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + other.calls,
        )


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """What one call produced.

    ``arguments`` is the raw, unparsed arguments string of the first call to the forced tool, or
    ``None`` when the model made no such call; recovering sloppy JSON is the caller's business.
    """

    arguments: str | None
    text: str | None
    usage: Usage
    model: str


class ModelError(Exception):
    """A model call failed. ``str(error)`` is short and safe to store: no keys, no prompt text.

    ``code`` is a stable reason (``timeout``, ``connection_error``, ``rate_limited``,
    ``server_error``, ``client_error``, ``bad_response``); ``status`` is the HTTP status, if any.
    """

    def __init__(
        self, message: str, *, code: str = "model_error", status: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


class TransientModelError(ModelError):
    """Worth trying again later: a timeout, a lost connection, a 429 or a 5xx.

    ``retry_after_s`` is the server's own estimate, when it sent one.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "model_error",
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message, code=code, status=status)
        self.retry_after_s = retry_after_s


class PermanentModelError(ModelError):
    """Trying again will not help: a 4xx other than 429, or a response that is not a completion."""


class ChatModel(Protocol):
    """A chat model called with a system text, a user text and one function tool it must call."""

    @property
    def model(self) -> str: ...

    async def call_tool(
        self,
        *,
        system: str,
        user: str,
        tool: Mapping[str, Any],
        timeout_s: float | None = None,
    ) -> ToolCallOutcome:
        """Call the model with ``tool`` (``{"name", "description", "parameters"}``) forced.

        Raises ``TransientModelError`` or ``PermanentModelError``; never a vendor exception.
        """
        ...
