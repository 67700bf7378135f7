"""Redaction through the real ``workmem serve`` process."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.servers import Server


def test_a_secret_is_redacted_through_the_real_server(tmp_path: Path) -> None:
    server = Server(tmp_path / "home")
    try:
        server.wait_ready()
        key_line = next(line for line in server.lines if "API key" in line)
        key = Path(key_line.rsplit(" ", 1)[-1]).read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as http:
            sid = http.post("/v1/sessions", json={"external_id": "redacted"}).json()["id"]
            messages = [
                {"role": "user", "content": "Fix app/models/user.py please."},
                {"role": "user", "content": "I prefer green tea; my login password=hunter2 too."},
            ]
            batch = http.post(f"/v1/sessions/{sid}/messages:batch", json={"messages": messages})
            assert batch.status_code == 201, batch.text
            done = http.post(
                f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0, "wait": True}
            )
            assert done.json()["status"] == "done", done.text
            assert "hunter2" in done.text
            redacted = http.post(
                f"/v1/sessions/{sid}/messages/2:redact", json={"reason": "a pasted password"}
            )
            assert redacted.status_code == 200, redacted.text
            assert redacted.json()["archived"] is True
            shown = [
                http.get(f"/v1/sessions/{sid}/messages"),
                http.get(f"/v1/sessions/{sid}/archives/1"),
                http.get(f"/v1/sessions/{sid}/working-memory"),
                http.get(f"/v1/sessions/{sid}/context"),
                http.get("/v1/memories"),
            ]
            assert all(page.status_code == 200 for page in shown)
            assert not any("hunter2" in page.text for page in shown)
            found = http.get(f"/v1/sessions/{sid}/history/search", params={"q": "hunter2"})
            assert found.json()["items"] == []
            listed = shown[0].json()["items"]
            assert [item["redacted_at"] is not None for item in listed] == [False, True]
            assert "app/models/user.py" in shown[2].text
    finally:
        server.stop()
