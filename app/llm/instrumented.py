"""A chat model that counts its calls: latency by outcome and errors by code, for ``/metrics``.

Wraps any provider (the composition root wraps the configured one); never changes a call or its
outcome, and records no prompt, text or key.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from app.llm.ports import ChatModel, ModelError, ToolCallOutcome
from app.metrics import MODEL_CALLS, MODEL_ERRORS


class InstrumentedChatModel:
    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner

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
        started = time.perf_counter()
        try:
            outcome = await self.inner.call_tool(
                system=system, user=user, tool=tool, timeout_s=timeout_s
            )
        except ModelError as error:
            MODEL_ERRORS.labels(error.code).inc()
            MODEL_CALLS.labels(error.code).observe(time.perf_counter() - started)
            raise
        MODEL_CALLS.labels("ok").observe(time.perf_counter() - started)
        return outcome
