"""The context ledger against the real ``workmem serve`` process and its worker: a recorded
context, after more appends and commits (new working memories, archived messages), renders to
the same sha256 byte for byte; once a message it sent is redacted, the render says which."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.ledger.records import messages_sha256
from tests.support.servers import Server

pytestmark = pytest.mark.e2e


@pytest.fixture
def served(tmp_path: Path) -> Iterator[httpx.Client]:
    server = Server(tmp_path / "home", env={"WORKMEM_WORKER_POLL_S": "0.1"})
    try:
        server.wait_ready()
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as http:
            yield http
    finally:
        server.stop()


def append(http: httpx.Client, sid: str, messages: list[dict[str, Any]]) -> None:
    response = http.post(f"/v1/sessions/{sid}/messages:batch", json={"messages": messages})
    assert response.status_code == 201, response.text


def commit(http: httpx.Client, sid: str) -> None:
    response = http.post(f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 2, "wait": True})
    assert response.status_code == 200, response.text
    assert response.json()["archive"]["status"] == "done", response.text


def turn(index: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"Round {index}: the release train leaves at {index}:00."},
        {"role": "assistant", "content": f"Noted the {index}:00 train."},
    ]


def test_a_recorded_context_renders_identical_after_more_history_until_a_redaction(
    served: httpx.Client,
) -> None:
    http = served
    sid = http.post("/v1/sessions", json={}).json()["id"]
    for index in range(1, 4):
        append(http, sid, turn(index))
    commit(http, sid)
    append(http, sid, turn(4))
    pinned = http.post(f"/v1/sessions/{sid}/pins", json={"message_seq": 7})
    assert pinned.status_code == 201, pinned.text
    context = http.get(
        f"/v1/sessions/{sid}/context",
        params={"record": "true", "fill": "true", "token_budget": 3000},
    ).json()
    context_id = context["context_id"]
    assert context["working_memory"] is not None
    assert context["stats"]["included_seqs"]

    # More appends and two more commits: a newer summary, the recorded tail archived.
    for index in range(5, 9):
        append(http, sid, turn(index))
        if index % 2 == 0:
            commit(http, sid)
    newer = http.get(f"/v1/sessions/{sid}/context", params={"token_budget": 3000}).json()
    assert newer["messages"] != context["messages"]

    body = http.get(f"/v1/sessions/{sid}/contexts/{context_id}", params={"render": "true"}).json()
    render = body["render"]
    assert render["unavailable"] == []
    assert render["matches"] is True
    assert (
        render["messages_sha256"] == body["messages_sha256"] == messages_sha256(context["messages"])
    )
    assert render["messages"] == context["messages"]
    assert render["system_prompt_addition"] == context["system_prompt_addition"]

    sent = context["stats"]["included_seqs"][-1]
    redacted = http.post(f"/v1/sessions/{sid}/messages/{sent}:redact", json={"reason": "test"})
    assert redacted.status_code == 200, redacted.text
    render = http.get(
        f"/v1/sessions/{sid}/contexts/{context_id}", params={"render": "true"}
    ).json()["render"]
    assert render["matches"] is False
    assert {"part": "message", "id": str(sent), "reason": "redacted"} in render["unavailable"]
    listed = http.get(f"/v1/sessions/{sid}/contexts").json()
    assert [item["context_id"] for item in listed["items"]] == [context_id]
