"""Reading OpenViking's envelope in tests: a success's result, an error's code and details."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

API = "/api/v1"
ENVELOPE_KEYS = {"status", "result", "error", "telemetry"}


def ok(response: httpx.Response) -> Any:
    """The result of a successful answer, after checking the envelope around it."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == ENVELOPE_KEYS, body
    assert (body["status"], body["error"], body["telemetry"]) == ("ok", None, None)
    return body["result"]


def failed(response: httpx.Response, code: str, status: int) -> dict[str, Any]:
    """The error of a failed answer, after checking the envelope, the code and the status."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == ENVELOPE_KEYS, body
    assert (body["status"], body["result"], body["telemetry"]) == ("error", None, None)
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == code
    assert isinstance(error["message"], str)
    assert error["message"]
    return error


def validation_locs(error: dict[str, Any]) -> list[list[str | int]]:
    return [item["loc"] for item in error["details"]["validation_errors"]]


async def append(
    http: httpx.AsyncClient, headers: dict[str, str], session_id: str, *messages: dict[str, Any]
) -> Any:
    response = await http.post(
        f"{API}/sessions/{session_id}/messages/batch",
        json={"messages": list(messages)},
        headers=headers,
    )
    return ok(response)


async def commit(
    http: httpx.AsyncClient, headers: dict[str, str], session_id: str, keep: int = 0
) -> Any:
    response = await http.post(
        f"{API}/sessions/{session_id}/commit", json={"keep_recent_count": keep}, headers=headers
    )
    return ok(response)


async def finished_task(
    http: httpx.AsyncClient, headers: dict[str, str], task_id: str, timeout_s: float = 60
) -> Any:
    """The task once its archive is processed (a worker runs in the app under test)."""
    deadline = time.monotonic() + timeout_s
    while True:
        task = ok(await http.get(f"{API}/tasks/{task_id}", headers=headers))
        if task["status"] in ("completed", "failed") or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.05)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}
