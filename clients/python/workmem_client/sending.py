"""What the sync and the async client share about sending a ``Call``: the request's arguments,
the credential header, and what an answer means (a result, a repeat, or an exception).

Pure: no connection is opened here; ``sync`` and ``aio`` own their ``httpx`` clients.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx

from workmem_client.call import Call
from workmem_client.errors import error_from
from workmem_client.retry import RetryPolicy

T = TypeVar("T")

USER_AGENT = "workmem-python"
FINISHED = frozenset({"done", "failed"})
"""The statuses of an archive whose working memory will not change any more."""


def auth_headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "User-Agent": USER_AGENT}


def request_of(call: Call[Any]) -> dict[str, Any]:
    """Keyword arguments of ``httpx.Client.request`` for ``call``."""
    arguments: dict[str, Any] = {"method": call.method, "url": call.path}
    if call.params:
        arguments["params"] = dict(call.params)
    if call.body is not None:
        arguments["json"] = call.body
    if call.headers:
        arguments["headers"] = dict(call.headers)
    return arguments


def answer(
    call: Call[T],
    response: httpx.Response,
    retry: RetryPolicy,
    attempt: int,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> tuple[T, None] | tuple[None, float]:
    """``(result, None)`` for a success, ``(None, delay_s)`` to repeat after ``delay_s``;
    raises the typed error otherwise."""
    if response.is_success:
        return call.parse(response), None
    delay = retry.delay_s(
        response.status_code, response.headers.get("retry-after"), attempt, now=now()
    )
    if delay is None:
        raise error_from(response)
    return None, delay
