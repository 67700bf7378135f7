"""Model and embedding providers that report each call: a usage row and Prometheus counters.

Wrap the configured chat model (outside the circuit breaker, so a call the breaker refused is
a ``refused`` row) and the configured embedder. The purpose of a chat call is read from the tool
it forces (creating or updating the working memory, extracting memories); an embedding works for
an archive (``embedding``) or for a search (``query_embedding``). Each call is also a span
(``chat {model}``, ``embeddings {model}``) with the GenAI attributes and the tokens reported,
when telemetry is on. Never changes a call or its outcome, never raises for its row, and records
no prompt, text or key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from app import telemetry
from app.llm.breaker import CircuitOpen
from app.llm.ports import ChatModel, ModelError, ToolCallOutcome
from app.memories.embedding import Embedder
from app.memories.tool import TOOL_NAME as EXTRACTION_TOOL
from app.metrics import MODEL_CALLS_BY_OUTCOME, MODEL_TOKENS, USAGE_ROWS_DROPPED
from app.observability import TENANT_ID
from app.usage.records import (
    CallScope,
    ModelCallRecord,
    Outcome,
    Purpose,
    current_scope,
    milliseconds,
)
from app.wm.schema import CREATE_TOOL_NAME, UPDATE_TOOL_NAME

Sink = Callable[[ModelCallRecord], None]

PURPOSE_OF_TOOL: Mapping[str, Purpose] = {
    CREATE_TOOL_NAME: "wm_create",
    UPDATE_TOOL_NAME: "wm_update",
    EXTRACTION_TOOL: "extraction",
}


def report(
    sink: Sink | None,
    scope: CallScope | None,
    *,
    purpose: Purpose,
    model: str,
    input_tokens: int,
    output_tokens: int,
    seconds: float,
    outcome: Outcome,
) -> None:
    """Count one call and hand its row to ``sink``; never raises."""
    MODEL_CALLS_BY_OUTCOME.labels(purpose, outcome).inc()
    MODEL_TOKENS.labels(model, purpose, "input").inc(input_tokens)
    MODEL_TOKENS.labels(model, purpose, "output").inc(output_tokens)
    if sink is None:
        return
    if scope is None:
        USAGE_ROWS_DROPPED.labels("no_tenant").inc()
        return
    sink(
        ModelCallRecord(
            scope=scope,
            purpose=purpose,
            model=model,
            input_tokens=max(0, input_tokens),
            output_tokens=max(0, output_tokens),
            latency_ms=milliseconds(seconds),
            outcome=outcome,
            at=datetime.now(UTC),
        )
    )


def span_attributes(
    operation: str, provider: str, model: str, purpose: Purpose, scope: CallScope | None
) -> dict[str, str | int | None]:
    """The GenAI attributes of a call's span, and whom it worked for."""
    return {
        telemetry.OPERATION: operation,
        telemetry.PROVIDER: provider,
        telemetry.REQUEST_MODEL: model,
        telemetry.PURPOSE: purpose,
        **(
            telemetry.ids(None)
            if scope is None
            else telemetry.ids(scope.tenant_id, scope.agent_session_id, scope.archive_seq)
        ),
    }


class MeteredChatModel:
    def __init__(self, inner: ChatModel, sink: Sink | None, *, provider: str = "openai") -> None:
        self.inner = inner
        self.sink = sink
        self.provider = provider

    @property
    def model(self) -> str:
        return self.inner.model

    async def call_tool(
        self,
        *,
        system: str,
        user: str,
        tool: Mapping[str, Any],
        timeout_s: float | None = None,
    ) -> ToolCallOutcome:
        purpose = PURPOSE_OF_TOOL.get(str(tool.get("name", "")), "other")
        scope = current_scope(TENANT_ID.get())
        model = self.inner.model
        attributes = span_attributes("chat", self.provider, model, purpose, scope)
        with telemetry.span(f"chat {model}", attributes, client=True) as current:
            started = time.perf_counter()
            try:
                outcome = await self.inner.call_tool(
                    system=system, user=user, tool=tool, timeout_s=timeout_s
                )
            except ModelError as error:
                seconds = time.perf_counter() - started
                report(
                    self.sink,
                    scope,
                    purpose=purpose,
                    model=model,
                    input_tokens=0,
                    output_tokens=0,
                    seconds=seconds,
                    outcome="refused" if isinstance(error, CircuitOpen) else "error",
                )
                telemetry.record_model_call(
                    current,
                    attributes=attributes,
                    input_tokens=0,
                    output_tokens=0,
                    seconds=seconds,
                    error_type=error.code,
                )
                raise
            seconds = time.perf_counter() - started
            usage = outcome.usage
            report(
                self.sink,
                scope,
                purpose=purpose,
                model=outcome.model or model,
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                seconds=seconds,
                outcome="ok",
            )
            if current is not None:
                current.set_attribute(telemetry.RESPONSE_MODEL, outcome.model or model)
            telemetry.record_model_call(
                current,
                attributes=attributes,
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                seconds=seconds,
                error_type=None,
            )
            return outcome


def _embedding_purpose(scope: CallScope | None) -> Purpose:
    """What the work said, else ``embedding`` for an archive and ``query_embedding`` for a
    search."""
    if scope is not None and scope.purpose is not None:
        return scope.purpose
    if scope is not None and scope.archive_seq is not None:
        return "embedding"
    return "query_embedding"


class CountingEmbedder(Embedder, Protocol):
    """An embedder that also tells the input tokens the provider reported."""

    async def embed_counted(self, texts: Sequence[str]) -> tuple[list[list[float]], int]: ...


class MeteredEmbedder:
    def __init__(
        self, inner: CountingEmbedder, *, model: str, sink: Sink | None, provider: str = "openai"
    ) -> None:
        self.inner = inner
        self.model = model
        self.sink = sink
        self.provider = provider

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        scope = current_scope(TENANT_ID.get())
        purpose = _embedding_purpose(scope)
        attributes = span_attributes("embeddings", self.provider, self.model, purpose, scope)
        with telemetry.span(f"embeddings {self.model}", attributes, client=True) as current:
            started = time.perf_counter()
            try:
                vectors, tokens = await self.inner.embed_counted(texts)
            except Exception as error:
                seconds = time.perf_counter() - started
                report(
                    self.sink,
                    scope,
                    purpose=purpose,
                    model=self.model,
                    input_tokens=0,
                    output_tokens=0,
                    seconds=seconds,
                    outcome="error",
                )
                telemetry.record_model_call(
                    current,
                    attributes=attributes,
                    input_tokens=0,
                    output_tokens=None,
                    seconds=seconds,
                    error_type=type(error).__name__,
                )
                raise
            seconds = time.perf_counter() - started
            report(
                self.sink,
                scope,
                purpose=purpose,
                model=self.model,
                input_tokens=tokens,
                output_tokens=0,
                seconds=seconds,
                outcome="ok",
            )
            telemetry.record_model_call(
                current,
                attributes=attributes,
                input_tokens=tokens,
                output_tokens=None,
                seconds=seconds,
                error_type=None,
            )
            return vectors
