"""OpenViking's envelope and error codes: the mapping from our statuses, and the two middlewares
that keep every answer under /api/v1 in the envelope (a crash, an encoded path separator)."""

from __future__ import annotations

import json
import logging

import httpx
import psycopg
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from app.compat.openviking.app import EnvelopeOnCrash, RefuseEncodedSeparators
from app.compat.openviking.envelope import (
    ErrorCode,
    ResourceNotFound,
    app_error_response,
    code_for_status,
)
from app.errors import Conflict, InvalidInput, PayloadTooLarge, Unavailable


@pytest.mark.parametrize(
    ("status", "code", "http_status"),
    [
        (400, ErrorCode.INVALID_ARGUMENT, 400),
        (401, ErrorCode.UNAUTHENTICATED, 401),
        (403, ErrorCode.PERMISSION_DENIED, 403),
        (404, ErrorCode.NOT_FOUND, 404),
        (405, ErrorCode.INVALID_ARGUMENT, 400),
        (409, ErrorCode.CONFLICT, 409),
        (413, ErrorCode.INVALID_ARGUMENT, 400),
        (422, ErrorCode.INVALID_ARGUMENT, 400),
        (429, ErrorCode.UNAVAILABLE, 503),  # a per-tenant limit: its clients retry
        (500, ErrorCode.INTERNAL, 500),
        (502, ErrorCode.INTERNAL, 500),
        (503, ErrorCode.UNAVAILABLE, 503),
    ],
)
def test_codes_by_status(status: int, code: ErrorCode, http_status: int) -> None:
    assert code_for_status(status) is code
    assert code.http_status == http_status


def body(response: httpx.Response | object) -> dict[str, object]:
    raw = getattr(response, "body", b"")
    assert isinstance(raw, bytes)
    parsed = json.loads(raw)
    assert isinstance(parsed, dict)
    return parsed


def test_app_errors_keep_their_message_and_give_details() -> None:
    invalid = InvalidInput("bad", errors=[{"loc": ["body", "x"], "msg": "no"}])
    assert body(app_error_response(invalid)) == {
        "status": "error",
        "result": None,
        "error": {
            "code": "INVALID_ARGUMENT",
            "message": "bad",
            "details": {"validation_errors": [{"loc": ["body", "x"], "msg": "no"}]},
        },
        "telemetry": None,
    }
    missing = app_error_response(ResourceNotFound("session", "conv-1"))
    assert missing.status_code == 404
    assert body(missing)["error"] == {
        "code": "NOT_FOUND",
        "message": "Session conv-1 not found",
        "details": {"resource": "conv-1", "type": "session"},
    }
    too_large = app_error_response(PayloadTooLarge("at most 500 messages per batch"))
    assert too_large.status_code == 400
    assert body(too_large)["error"] == {
        "code": "INVALID_ARGUMENT",
        "message": "at most 500 messages per batch",
        "details": {},
    }
    assert app_error_response(Conflict("taken")).status_code == 409
    assert app_error_response(Unavailable("down")).status_code == 503


class Boom(RuntimeError):
    pass


async def crash(scope: Scope, receive: Receive, send: Send) -> None:
    raise Boom("the database said something secret")


async def unreachable(scope: Scope, receive: Receive, send: Send) -> None:
    raise psycopg.OperationalError("connection to server failed: Connection refused")


async def crash_after_start(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    raise Boom("too late to answer")


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"reached"})


def client(app: ASGIApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_a_crash_is_an_internal_error_envelope_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = EnvelopeOnCrash(crash)
    with caplog.at_level(logging.ERROR):
        async with client(app) as http:
            response = await http.get("/api/v1/sessions")
    assert response.status_code == 500
    assert response.json()["error"] == {
        "code": "INTERNAL",
        "message": "an unexpected error occurred",
        "details": {},
    }
    assert "secret" not in response.text
    assert [record.getMessage() for record in caplog.records] == ["unhandled error"]


async def test_an_unreachable_database_is_unavailable() -> None:
    app = EnvelopeOnCrash(unreachable)
    async with client(app) as http:
        response = await http.get("/api/v1/sessions")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "UNAVAILABLE"


async def test_a_crash_after_the_answer_started_is_not_answered_twice() -> None:
    app = EnvelopeOnCrash(crash_after_start)
    async with client(app) as http:
        with pytest.raises(Boom):
            await http.get("/api/v1/sessions")


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ("/api/v1/sessions/a%2Fb", True),
        ("/api/v1/sessions/a%2fcontext", True),
        ("/api/v1/sessions/a%5Cb/messages", True),
        ("/api/v1/sessions/a%252Fb", False),
        ("/api/v1/sessions/a%40b", False),
        ("/api/v1/sessions/a?cursor=x%2Fy", False),
    ],
)
async def test_encoded_path_separators_are_refused(path: str, refused: bool) -> None:
    async with client(RefuseEncodedSeparators(echo)) as http:
        response = await http.get(path)
    if refused:
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "INVALID_ARGUMENT"
    else:
        assert response.text == "reached"
