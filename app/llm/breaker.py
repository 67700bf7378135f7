"""A circuit breaker for one model provider: after consecutive failures, calls fall back at once
for a cooling-off period instead of each waiting out the provider's timeouts and retries.

The state machine is ``CircuitBreaker`` (a clock passed in, no I/O); ``BreakerChatModel`` puts
it in front of a ``ChatModel`` and says what happens (a log line and metrics on each change).

- **closed**: calls go through; ``failures`` consecutive failed calls open it.
- **open**: every call is refused at once until ``cooldown_s`` has passed since it opened.
- **half-open**: one call goes through as a probe (others are refused meanwhile); its success
  closes the circuit, its failure opens it again for another ``cooldown_s``.

A failure is a ``TransientModelError`` (timeout, lost connection, 429, 5xx): the provider is
down or overloaded. Any answer, a 4xx or an unusable one included, shows it is up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.llm.ports import ChatModel, ModelError, ToolCallOutcome, TransientModelError
from app.metrics import MODEL_CIRCUIT_OPEN, MODEL_CIRCUIT_REFUSED, MODEL_CIRCUIT_TRANSITIONS

logger = logging.getLogger(__name__)


class CircuitState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True, slots=True)
class BreakerConfig:
    failures: int = 3
    """Consecutive failed calls that open the circuit."""
    cooldown_s: float = 60.0
    """How long an open circuit refuses every call before it lets one probe through."""

    def __post_init__(self) -> None:
        if self.failures < 1 or self.cooldown_s <= 0:
            raise ValueError("a breaker needs failures >= 1 and cooldown_s > 0")


class CircuitBreaker:
    """The state machine; ``clock`` gives monotonic seconds."""

    def __init__(self, config: BreakerConfig, clock: Callable[[], float]) -> None:
        self.config = config
        self.clock = clock
        self.state = CircuitState.CLOSED
        self.failures = 0
        self.opened_at = 0.0
        self.probing = False

    def allow(self) -> tuple[bool, CircuitState | None]:
        """May a call go now? And the state entered on the way, if any (open → half-open)."""
        if self.state is CircuitState.CLOSED:
            return True, None
        if self.state is CircuitState.OPEN:
            if self.clock() - self.opened_at < self.config.cooldown_s:
                return False, None
            self.state = CircuitState.HALF_OPEN
            self.probing = True
            return True, CircuitState.HALF_OPEN
        if self.probing:
            return False, None
        self.probing = True
        return True, None

    def succeeded(self) -> CircuitState | None:
        """A call that went through got an answer; the state entered, if it changed."""
        self.failures = 0
        self.probing = False
        if self.state is CircuitState.CLOSED:
            return None
        self.state = CircuitState.CLOSED
        return CircuitState.CLOSED

    def failed(self) -> CircuitState | None:
        """A call that went through failed; the state entered, if it changed."""
        self.probing = False
        self.failures += 1
        if self.state is CircuitState.HALF_OPEN or (
            self.state is CircuitState.CLOSED and self.failures >= self.config.failures
        ):
            self.state = CircuitState.OPEN
            self.opened_at = self.clock()
            return CircuitState.OPEN
        return None

    def abandoned(self) -> None:
        """A call that went through ended with no answer either way (it was cancelled): a
        half-open circuit lets the next call probe."""
        self.probing = False


class CircuitOpen(TransientModelError):
    """The provider's circuit is open: the call was not made."""

    def __init__(self, provider: str) -> None:
        super().__init__(
            f"the model provider {provider} failed repeatedly; calls are paused",
            code="circuit_open",
        )


class BreakerChatModel:
    """A ``ChatModel`` whose calls pass through the provider's breaker."""

    def __init__(self, inner: ChatModel, breaker: CircuitBreaker, *, provider: str) -> None:
        self.inner = inner
        self.breaker = breaker
        self.provider = provider
        MODEL_CIRCUIT_OPEN.labels(provider).set(0)

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
        allowed, entered = self.breaker.allow()
        self._entered(entered)
        if not allowed:
            MODEL_CIRCUIT_REFUSED.labels(self.provider).inc()
            raise CircuitOpen(self.provider)
        try:
            outcome = await self.inner.call_tool(
                system=system, user=user, tool=tool, timeout_s=timeout_s
            )
        except TransientModelError:
            self._entered(self.breaker.failed())
            raise
        except ModelError:
            self._entered(self.breaker.succeeded())  # the provider answered (a 4xx, …)
            raise
        except BaseException:
            self.breaker.abandoned()
            raise
        self._entered(self.breaker.succeeded())
        return outcome

    def _entered(self, state: CircuitState | None) -> None:
        if state is None:
            return
        MODEL_CIRCUIT_TRANSITIONS.labels(self.provider, state.value).inc()
        MODEL_CIRCUIT_OPEN.labels(self.provider).set(1 if state is CircuitState.OPEN else 0)
        if state is CircuitState.OPEN:
            logger.warning(
                "model circuit opened: calls fall back at once",
                extra={
                    "provider": self.provider,
                    "failures": self.breaker.failures,
                    "cooldown_s": self.breaker.config.cooldown_s,
                },
            )
        elif state is CircuitState.CLOSED:
            logger.info("model circuit closed: calls go through", extra={"provider": self.provider})
        else:
            logger.info(
                "model circuit half-open: one call probes", extra={"provider": self.provider}
            )
