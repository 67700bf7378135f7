"""Restoring an earlier working memory, against the real ``workmem serve`` process: version 1
becomes current again as a new version (generator ``restore``, a ``RESTORE`` decision per
section naming the version and the key), the history keeps every version, and the next commit
updates from the restored one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import Server

pytestmark = pytest.mark.e2e


def _append(http: httpx.Client, session: str, text: str) -> None:
    response = http.post(f"/v1/sessions/{session}/messages", json={"role": "user", "content": text})
    assert response.status_code == 201, response.text


def _commit(http: httpx.Client, session: str) -> dict[str, Any]:
    response = http.post(
        f"/v1/sessions/{session}/commit", json={"keep_recent_count": 0, "wait": True}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "done", body
    return body


def _current(http: httpx.Client, session: str) -> dict[str, Any]:
    response = http.get(f"/v1/sessions/{session}/working-memory")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_restore_then_commit(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(home, env={"WORKMEM_MEMORY_EXTRACTOR": "off"})
    server.wait_ready()
    try:
        key = (home / "local-api-key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as http:
            session = http.post("/v1/sessions", json={}).json()["id"]
            _append(http, session, "Goal: migrate the billing service to Postgres 16.")
            _commit(http, session)
            first = _current(http, session)
            _append(http, session, "Error: the kiwi importer crashed on a NULL price.")
            _commit(http, session)
            _append(http, session, "Decision: drop the kiwi importer and use the mango loader.")
            _commit(http, session)
            assert "kiwi" in _current(http, session)["markdown"]

            restored = http.post(
                f"/v1/sessions/{session}/working-memory:restore", json={"archive_seq": 1}
            )
            assert restored.status_code == 201, restored.text
            body = restored.json()
            assert body["archive_seq"] == 4
            assert body["generator"] == "restore"
            assert body["sections"] == first["sections"]
            assert "kiwi" not in body["markdown"]
            assert {d["applied"] for d in body["decisions"]} == {"RESTORE"}
            assert {d["reason"] for d in body["decisions"]} == {"restored"}
            details = body["decisions"][0]["details"]
            assert details["restored_from_archive"] == 1
            assert details["replaced_archive"] == 3
            assert details["restored_by_key"]
            assert _current(http, session)["archive_seq"] == 4

            # Append-only: the restore is an archive of its own, after the three commits.
            archives = http.get(f"/v1/sessions/{session}/archives").json()["items"]
            assert [a["archive_seq"] for a in archives] == [4, 3, 2, 1]
            assert (archives[0]["generator"], archives[0]["status"]) == ("restore", "done")
            assert archives[0]["start_seq"] == archives[0]["end_seq"] + 1 == 4
            expanded = http.get(f"/v1/sessions/{session}/archives/4").json()
            assert expanded["messages"] == []
            history = http.get(
                f"/v1/sessions/{session}/working-memory/history", params={"limit": 200}
            ).json()["items"]
            assert sorted({row["archive_seq"] for row in history}) == [1, 2, 3, 4]

            # The context's summary is the restored version.
            context = http.get(f"/v1/sessions/{session}/context").json()
            summary = context["messages"][0]["content"]
            assert "billing" in summary
            assert "kiwi" not in summary

            # The next commit updates from the restored version.
            _append(http, session, "Next: the papaya report needs a weekly schedule.")
            after = _commit(http, session)
            assert after["archive"]["archive_seq"] == 5
            markdown = after["working_memory"]["markdown"]
            assert "papaya" in markdown
            assert "billing" in markdown
            assert "kiwi" not in markdown
    finally:
        server.stop()
