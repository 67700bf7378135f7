"""A scripted stand-in for the chat-model port, for tests of code that calls a model.

Owns replaying a fixed list of outcomes and errors in order and remembering what it was asked.
Never talks to a network or decides anything itself: a call beyond the script is a test defect.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.llm.ports import ToolCallOutcome, Usage

ScriptStep = ToolCallOutcome | BaseException


@dataclass(frozen=True, slots=True)
class ChatCall:
    """One call received by ``ScriptedChatModel``, as given."""

    system: str
    user: str
    tool: Mapping[str, Any]
    timeout_s: float | None


class ScriptExhaustedError(AssertionError):
    """The code under test called the model more often than the test scripted."""


def tool_call(
    arguments: str | None,
    *,
    text: str | None = None,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    model: str = "scripted",
) -> ToolCallOutcome:
    """An outcome in which the model called the forced tool with ``arguments`` (any string);
    ``None`` means it made no such call."""
    return ToolCallOutcome(
        arguments=arguments,
        text=text,
        usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, calls=1),
        model=model,
    )


def no_tool_call(
    text: str | None = None,
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    model: str = "scripted",
) -> ToolCallOutcome:
    """An outcome in which the model answered without calling the tool."""
    return tool_call(
        None,
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model=model,
    )


class ScriptedChatModel:
    """Returns or raises the scripted steps in order and records every call in ``calls``."""

    def __init__(self, steps: Iterable[ScriptStep] = (), *, model: str = "scripted") -> None:
        self._steps: deque[ScriptStep] = deque(steps)
        self._model = model
        self.calls: list[ChatCall] = []

    @property
    def model(self) -> str:
        return self._model

    @property
    def remaining(self) -> int:
        """Steps not yet consumed; a test can assert the code made every call it expected."""
        return len(self._steps)

    def push(self, *steps: ScriptStep) -> None:
        self._steps.extend(steps)

    async def call_tool(
        self,
        *,
        system: str,
        user: str,
        tool: Mapping[str, Any],
        timeout_s: float | None = None,
    ) -> ToolCallOutcome:
        self.calls.append(ChatCall(system=system, user=user, tool=tool, timeout_s=timeout_s))
        if not self._steps:
            raise ScriptExhaustedError(
                f"model called {len(self.calls)} times; the script had {len(self.calls) - 1} steps"
            )
        step = self._steps.popleft()
        if isinstance(step, BaseException):
            raise step
        return step
