"""When the client repeats a request: only a 429 or 503 that says when, within the limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from workmem_client.retry import RetryPolicy, parse_retry_after

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
POLICY = RetryPolicy(max_retries=3, max_wait_s=60.0)


def http_date(delta_s: float) -> str:
    return format_datetime(NOW + timedelta(seconds=delta_s), usegmt=True)


@pytest.mark.parametrize(
    ("status", "retry_after", "attempt", "expected"),
    [
        (429, "2", 0, 2.0),
        (503, "2", 0, 2.0),
        (429, "0", 0, 0.0),
        # No Retry-After: the server did not say a repeat is safe, so none is made.
        (429, None, 0, None),
        (503, None, 0, None),
        # Other statuses are never repeated, whatever they carry.
        (500, "1", 0, None),
        (502, "1", 0, None),
        (409, "1", 0, None),
        (200, "1", 0, None),
        # The number of repeats: below, at and above max_retries.
        (429, "1", 2, 1.0),
        (429, "1", 3, None),
        (429, "1", 4, None),
        # The longest wait: just below, at and just above max_wait_s.
        (429, "59", 0, 59.0),
        (429, "60", 0, 60.0),
        (429, "61", 0, None),
        # HTTP dates: in the future, in the past (at once), too far off.
        (503, http_date(30), 0, 30.0),
        (503, http_date(-30), 0, 0.0),
        (503, http_date(3600), 0, None),
        # Malformed values are not guessed at.
        (429, "soon", 0, None),
        (429, "-5", 0, None),
        (429, "1.5", 0, None),
        (429, "", 0, None),
    ],
)
def test_delay(status: int, retry_after: str | None, attempt: int, expected: float | None) -> None:
    assert POLICY.delay_s(status, retry_after, attempt, now=NOW) == expected


def test_no_retries_at_all() -> None:
    assert RetryPolicy(max_retries=0).delay_s(429, "1", 0, now=NOW) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [("7", 7.0), (" 7 ", 7.0), (http_date(5), 5.0), ("Wed, 32 Dec 2026 00:00:00 GMT", None)],
)
def test_parse_retry_after(value: str, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected
