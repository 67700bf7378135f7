"""The append routes' direct handler answers every request as FastAPI's own handler does.

Each request is sent twice: to the service as it runs (the common request goes straight to the
endpoint) and to the same service with a dependency override set, which sends every request
through FastAPI's whole handler. Refusals must be byte for byte the same (which problem, in
which order of checks); accepted appends the same status and shape, each numbered next.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.config import Settings
from app.db import Database
from app.main import create_app
from tests.conftest import TenantKeys
from tests.support.api import create_session

JSON = {"Content-Type": "application/json"}
VALID = b'{"role": "user", "content": "hello"}'


def _never_used() -> None:
    """A dependency no route declares: overriding it changes nothing but the handler taken."""


@pytest.fixture
async def whole_way(settings: Settings, database: Database) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, database=database)
    app.dependency_overrides[_never_used] = _never_used
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://workmem.test"
        ) as http,
    ):
        yield http


# (case, path under the session ("{id}" is its id), key, extra headers, body, expected status)
CASES: list[tuple[str, str, str, dict[str, str], bytes, int]] = [
    ("valid", "{id}/messages", "writer", JSON, VALID, 201),
    (
        "valid, JSON with a charset",
        "{id}/messages",
        "writer",
        {"Content-Type": "application/json; charset=utf-8"},
        VALID,
        201,
    ),
    (
        "valid batch",
        "{id}/messages:batch",
        "writer",
        JSON,
        b'{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}',
        201,
    ),
    ("broken JSON", "{id}/messages", "writer", JSON, b'{"role": "user", "content": ', 422),
    ("NaN", "{id}/messages", "writer", JSON, b'{"role": "user", "content": NaN}', 422),
    ("unknown role", "{id}/messages", "writer", JSON, b'{"role": "robot", "content": "x"}', 422),
    ("not an object", "{id}/messages", "writer", JSON, b"[1, 2]", 422),
    ("empty body", "{id}/messages", "writer", JSON, b"", 422),
    ("empty batch", "{id}/messages:batch", "writer", JSON, b'{"messages": []}', 422),
    ("declared as text", "{id}/messages", "writer", {"Content-Type": "text/plain"}, VALID, 201),
    ("no key, bad body", "{id}/messages", "none", JSON, b'{"role": "robot"}', 401),
    ("no key, broken JSON", "{id}/messages", "none", JSON, b'{"role"', 422),
    ("read-only key", "{id}/messages", "reader", JSON, VALID, 403),
    ("read-only key, bad id", "not-an-id/messages", "reader", JSON, VALID, 403),
    ("bad id", "not-an-id/messages", "writer", JSON, VALID, 422),
    ("bad id and bad body", "not-an-id/messages", "writer", JSON, b'{"role": "x"}', 422),
    ("missing agent session", f"{uuid.UUID(int=7)}/messages", "writer", JSON, VALID, 404),
    ("id without dashes", f"{uuid.UUID(int=7).hex}/messages", "writer", JSON, VALID, 404),
    (
        "bad idempotency key",
        "{id}/messages",
        "writer",
        {**JSON, "Idempotency-Key": "has spaces"},
        VALID,
        422,
    ),
]


def headers_for(keys: TenantKeys, key: str, extra: dict[str, str]) -> dict[str, str]:
    chosen = {"writer": keys.writer, "reader": keys.reader}.get(key)
    auth = {} if chosen is None else {"Authorization": f"Bearer {chosen}"}
    return {**auth, **extra}


def shape(value: Any) -> Any:
    """The keys of an answer, all the way down (values that differ between two appends out)."""
    if isinstance(value, dict):
        return {key: shape(child) for key, child in value.items()}
    if isinstance(value, list):
        return [shape(child) for child in value]
    return type(value).__name__


@pytest.mark.parametrize(
    ("case", "path", "key", "extra", "body", "status"), CASES, ids=[c[0] for c in CASES]
)
async def test_each_request_is_answered_as_the_whole_handler_answers_it(
    client: httpx.AsyncClient,
    whole_way: httpx.AsyncClient,
    tenant: TenantKeys,
    case: str,
    path: str,
    key: str,
    extra: dict[str, str],
    body: bytes,
    status: int,
) -> None:
    agent_session_id = await create_session(client, tenant)
    url = "/v1/sessions/" + path.replace("{id}", agent_session_id)
    headers = headers_for(tenant, key, extra)
    direct = await client.post(url, content=body, headers=headers)
    whole = await whole_way.post(url, content=body, headers=headers)
    assert direct.status_code == whole.status_code == status, (case, direct.text, whole.text)
    assert direct.headers["content-type"] == whole.headers["content-type"], case
    if status >= 400:
        assert direct.content == whole.content, case
        return
    first, second = direct.json(), whole.json()
    assert shape(first) == shape(second), case
    seqs = [m["seq"] for m in first.get("messages", [first.get("message")])]
    later = [m["seq"] for m in second.get("messages", [second.get("message")])]
    assert later == [seq + len(seqs) for seq in seqs], case


async def _answer(app: Any, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """The app's answer to a request whose client goes away before sending its body."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("workmem.test", 80),
    }
    status = 0
    body = b""

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, body
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            body += message.get("body", b"")

    await app(scope, receive, send)
    return status, body


async def test_a_client_gone_before_its_body_is_answered_as_the_whole_handler_answers_it(
    client: httpx.AsyncClient, settings: Settings, database: Database, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    path = f"/v1/sessions/{agent_session_id}/messages"
    headers = [
        (b"authorization", f"Bearer {tenant.writer}".encode()),
        (b"content-type", b"application/json"),
    ]
    answers = []
    for overridden in (False, True):
        app = create_app(settings, database=database)
        if overridden:
            app.dependency_overrides[_never_used] = _never_used
        async with LifespanManager(app) as manager:
            answers.append(await _answer(manager.app, path, headers))
    direct, whole = answers
    assert direct == whole
    assert direct[0] == 400, direct
