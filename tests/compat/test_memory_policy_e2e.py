"""Memory policy end to end, against the real ``workmem serve`` process: set through OpenViking's
own client (``memory_policy`` on create, ``update_session_config``) and through ``/v1`` (on
create, ``PATCH``, and a user's default set by a tenant admin), and obeyed by the archives."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from openviking_sdk import SyncHTTPClient
from openviking_sdk.errors import InvalidArgumentError, NotFoundError

from tests.support.servers import Server

pytestmark = pytest.mark.e2e

FACTS = (
    "I prefer green tea to coffee.",
    "Last Saturday I ran the Berlin marathon with my brother Tom.",
    "My name is Dana and I live in Lisbon.",
)


def _task(client: SyncHTTPClient, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        task: dict[str, Any] = client.get_task(task_id)
        if task["status"] in ("completed", "failed") or time.monotonic() > deadline:
            return task
        time.sleep(0.1)


def _archive_of(http: httpx.Client, external_id: str, archive_seq: int) -> dict[str, Any]:
    listed = http.get("/v1/sessions", params={"external_id": external_id}).json()["items"]
    response = http.get(f"/v1/sessions/{listed[0]['id']}/archives/{archive_seq}")
    assert response.status_code == 200, response.text
    archive: dict[str, Any] = response.json()
    return archive


def _through_the_sdk(client: SyncHTTPClient, http: httpx.Client) -> None:
    created = client.create_session(
        session_id="ov-policy",
        options={"memory_policy": {"self": {"enabled": True}, "memory_types": ["preferences"]}},
    )
    assert created["memory_policy"] == {
        "long_term_extraction": True,
        "memory_types": ["preference"],
    }
    with pytest.raises(InvalidArgumentError):
        client.create_session(
            session_id="ov-refused", options={"memory_policy": {"memory_types": ["opinions"]}}
        )
    with pytest.raises(NotFoundError):
        client.get_session("ov-refused")
    # The client's config call has no memory_policy option of its own: it goes as an extra field.
    updated = client.update_session_config(
        "ov-policy",
        options={
            "auto_commit_policy": None,
            "extra": {"memory_policy": {"working_memory": False, "memory_types": ["preferences"]}},
        },
    )
    assert updated == {
        "session_id": "ov-policy",
        "memory_policy": {"working_memory": False, "memory_types": ["preference"]},
        "auto_commit_policy": None,
    }
    with pytest.raises(InvalidArgumentError):
        client.update_session_config(
            "ov-policy", options={"extra": {"memory_policy": {"self": "off"}}}
        )
    assert client.get_session("ov-policy")["memory_policy"] == updated["memory_policy"]
    session = client.session("ov-policy")
    for fact in FACTS:
        session.add_message(role="user", content=fact)
    committed = session.commit()
    assert _task(client, committed["task_id"])["status"] == "completed"
    archive = _archive_of(http, "ov-policy", 1)
    assert archive["generator"] is None
    assert archive["memories"]["added"] == 1
    assert archive["memories"]["skipped"]["not_allowed"] == 2
    context = client.get_session_context("ov-policy", token_budget=4000)
    texts = [part["text"] for message in context["messages"] for part in message["parts"]]
    assert texts == list(FACTS)


def _through_v1(http: httpx.Client) -> None:
    put = http.put("/v1/users/dana/memory-policy", json={"long_term_extraction": False})
    assert put.status_code == 200, put.text
    refused = http.put("/v1/users/dana/memory-policy", json={"long_term_extraction": "no"})
    assert refused.status_code == 422
    assert refused.headers["content-type"] == "application/problem+json"
    inherits = http.post("/v1/sessions", json={"user_id": "dana", "external_id": "v1-inherits"})
    own = http.post(
        "/v1/sessions",
        json={
            "user_id": "dana",
            "external_id": "v1-own",
            "memory_policy": {"long_term_extraction": True},
        },
    )
    patched = http.patch(
        f"/v1/sessions/{own.json()['id']}",
        json={"memory_policy": {"long_term_extraction": True, "memory_types": ["profile"]}},
    )
    assert patched.status_code == 200, patched.text
    added = {}
    for created in (inherits, own):
        sid = created.json()["id"]
        messages = [{"role": "user", "content": fact} for fact in FACTS]
        http.post(f"/v1/sessions/{sid}/messages:batch", json={"messages": messages})
        response = http.post(
            f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0, "wait": True}
        )
        assert response.json()["status"] == "done", response.text
        added[created.json()["external_id"]] = response.json()["archive"]["memories"]
    assert added["v1-inherits"] is None
    assert added["v1-own"]["added"] == 1
    memories = http.get("/v1/memories", params={"user_id": "dana"}).json()["items"]
    assert [m["category"] for m in memories] == ["profile"]


def test_memory_policy_against_workmem_serve(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(home)
    try:
        server.wait_ready()
        key = (home / "local-api-key").read_text().strip()
        client = SyncHTTPClient(url=server.base_url, api_key=key)
        client.initialize()
        headers = {"Authorization": f"Bearer {key}"}
        try:
            with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as http:
                _through_the_sdk(client, http)
                _through_v1(http)
        finally:
            client.close()
    finally:
        log = server.stop()
    assert '"level": "error"' not in log
