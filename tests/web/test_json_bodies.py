"""A JSON body is read as JSON whatever content type it declares: ``curl -d`` (which labels it a
form) and ``curl --data-binary`` with ``text/plain``, against the real server, on ``/v1`` and on
``/api/v1``; a body that is not JSON is a 422 whatever its label."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.support.servers import Server

pytestmark = pytest.mark.e2e


def curl(server: Server, key: str, path: str, *data: str) -> tuple[int, dict[str, Any]]:
    result = subprocess.run(
        [
            "curl", "-s", "-w", "\n%{http_code}", "-H", f"Authorization: Bearer {key}",
            *data, f"{server.base_url}{path}",
        ],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    body, _, status = result.stdout.rpartition("\n")
    return int(status), json.loads(body)


CURL_STYLES = {
    "curl -d (a form, to curl)": ("-d",),
    "text/plain": ("-H", "content-type: text/plain", "--data-binary"),
}


@pytest.mark.parametrize("style", CURL_STYLES, ids=list(CURL_STYLES))
def test_a_json_body_is_read_whatever_its_declared_type(
    server: Server, key: str, style: str
) -> None:
    flags = CURL_STYLES[style]
    status, created = curl(server, key, "/v1/sessions", *flags, '{"user_id": "curl"}')
    assert status == 201, created
    assert created["user_id"] == "curl"
    status, appended = curl(
        server,
        key,
        f"/v1/sessions/{created['id']}/messages",
        *flags,
        '{"role": "user", "content": "hello"}',
    )
    assert status == 201, appended
    assert appended["message"]["message"] == {"role": "user", "content": "hello"}

    status, envelope = curl(
        server,
        key,
        "/api/v1/sessions/curl-conv/messages",
        *flags,
        '{"role": "user", "content": "hi"}',
    )
    assert status == 200, envelope
    assert envelope["status"] == "ok"


def test_a_body_that_is_not_json_is_refused_as_such(server: Server, key: str) -> None:
    status, problem = curl(server, key, "/v1/sessions", "-d", "user_id=curl")
    assert status == 422, problem
    assert problem["type"] == "validation_error"
    assert "JSON" in json.dumps(problem), problem
