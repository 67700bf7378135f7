"""Recording by default against the real ``workmem serve`` process: an agent session created
with ``record_contexts`` records the contexts of requests that do not say ``record`` (the
compact's too), and a recorded one renders to the hash it was sent with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

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


def test_a_session_that_records_by_default_through_the_server(served: httpx.Client) -> None:
    created = served.post("/v1/sessions", json={"record_contexts": True})
    assert created.status_code == 201, created.text
    assert created.json()["record_contexts"] is True
    sid = created.json()["id"]
    appended = served.post(
        f"/v1/sessions/{sid}/messages:batch",
        json={
            "messages": [
                {"role": "user", "content": "The release train leaves at 9:00."},
                {"role": "assistant", "content": "Noted the 9:00 train."},
            ]
        },
    )
    assert appended.status_code == 201, appended.text

    context = served.get(f"/v1/sessions/{sid}/context")
    assert context.status_code == 200, context.text
    context_id = context.json()["context_id"]
    assert context_id is not None
    left_out = served.get(f"/v1/sessions/{sid}/context", params={"record": "false"})
    assert left_out.json()["context_id"] is None
    compacted = served.post(f"/v1/sessions/{sid}/compact")
    assert compacted.status_code == 200, compacted.text
    assert compacted.json()["context_id"] is not None

    page = served.get(f"/v1/sessions/{sid}/contexts").json()["items"]
    assert [row["source"] for row in page] == ["compact", "context"]
    rendered = served.get(f"/v1/sessions/{sid}/contexts/{context_id}", params={"render": "true"})
    assert rendered.json()["render"]["matches"] is True, rendered.text

    off = served.patch(f"/v1/sessions/{sid}", json={"record_contexts": False})
    assert off.json()["record_contexts"] is False
    assert served.get(f"/v1/sessions/{sid}/context").json()["context_id"] is None
    assert len(served.get(f"/v1/sessions/{sid}/contexts").json()["items"]) == 2
