"""When the client repeats a request: only after a 429 or 503 that says when, by ``Retry-After``.

Pure: a status, the header and the attempt number in, a delay (or none) out. Any other failure
is raised at once, because the request may have been carried out (a write is safe to repeat
only under its ``Idempotency-Key``, which the caller chooses).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

RETRYABLE_STATUSES = frozenset({429, 503})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    """Repeats of one request at most (0: never repeat)."""
    max_wait_s: float = 60.0
    """A ``Retry-After`` longer than this is not waited for: the error is raised."""

    def delay_s(
        self, status: int, retry_after: str | None, attempt: int, *, now: datetime
    ) -> float | None:
        """Seconds to wait before repeating, ``None`` to raise. ``attempt`` counts the repeats
        already made (0 before the first)."""
        if status not in RETRYABLE_STATUSES or retry_after is None:
            return None
        if attempt >= self.max_retries:
            return None
        wait = parse_retry_after(retry_after, now=now)
        if wait is None or wait > self.max_wait_s:
            return None
        return wait


def parse_retry_after(value: str, *, now: datetime) -> float | None:
    """Seconds from ``Retry-After`` (delta-seconds or an HTTP date); ``None`` when malformed.
    A date in the past means at once."""
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - now).total_seconds())
