"""What happens to a delivery after an attempt: delivered, tried again later, or failed.

Pure: the attempt's result, its number and the retry settings in, the next state out. Backoff is
exponential from ``base_s`` (``base_s × 2^(attempt−1)``), capped at ``max_s``, with ±20 % jitter
passed in so tests can pin it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    max_attempts: int = 8
    base_s: float = 5.0
    max_s: float = 3600.0

    def backoff_s(self, attempt: int, jitter: float = 1.0) -> float:
        return min(self.max_s, self.base_s * 2.0 ** (attempt - 1)) * jitter


@dataclass(frozen=True, slots=True)
class Next:
    status: Literal["delivered", "pending", "failed"]
    delay_s: float | None
    """Seconds until the next attempt, when there is one."""


def is_success(status_code: int | None) -> bool:
    """A 2xx answer delivers; anything else (a redirect included: it is never followed) fails."""
    return status_code is not None and 200 <= status_code < 300


def after_attempt(
    status_code: int | None, attempt: int, schedule: RetrySchedule, jitter: float = 1.0
) -> Next:
    if is_success(status_code):
        return Next("delivered", None)
    if attempt >= schedule.max_attempts:
        return Next("failed", None)
    return Next("pending", schedule.backoff_s(attempt, jitter))
