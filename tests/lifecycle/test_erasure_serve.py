"""Erasing a user through the real ``workmem serve`` process; the receipt checked offline by
the real ``workmem receipts verify``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.servers import Server, closed_port, workmem_command

pytestmark = pytest.mark.e2e


def test_a_user_is_erased_through_the_real_server(tmp_path: Path) -> None:
    server = Server(tmp_path / "home")
    try:
        server.wait_ready()
        key_line = next(line for line in server.lines if "API key" in line)
        key = Path(key_line.rsplit(" ", 1)[-1]).read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as http:
            sessions = []
            for user in ("dora", "eve"):
                created = http.post("/v1/sessions", json={"user_id": user, "external_id": user})
                assert created.status_code == 201, created.text
                sid = created.json()["id"]
                sessions.append(sid)
                said = [{"role": "user", "content": f"I prefer {user}-marker tea, always."}]
                batch = http.post(f"/v1/sessions/{sid}/messages:batch", json={"messages": said})
                assert batch.status_code == 201, batch.text
                done = http.post(
                    f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0, "wait": True}
                )
                assert done.json()["status"] == "done", done.text
            erased = http.delete("/v1/users/dora")
            assert erased.status_code == 200, erased.text
            receipt = erased.json()
            assert receipt["removed"]["agent_sessions"] == 1
            assert receipt["removed"]["messages"] == 1
            assert http.get(f"/v1/sessions/{sessions[0]}").status_code == 404
            kept = http.get(f"/v1/sessions/{sessions[1]}/messages")
            assert "eve-marker" in kept.text
            found = http.get("/v1/memories", params={"user_id": "dora"}).json()["items"]
            assert found == []
            public = http.get("/v1/receipts/public-key")
            assert public.status_code == 200, public.text
        receipt_file = tmp_path / "receipt.json"
        receipt_file.write_text(json.dumps(receipt))
        key_file = tmp_path / "key.json"
        key_file.write_text(public.text)
        environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith("WORKMEM_")},
            "DATABASE_URL": f"postgresql://nobody@127.0.0.1:{closed_port()}/none",
        }
        checked = subprocess.run(
            [
                *workmem_command(),
                "receipts",
                "verify",
                str(receipt_file),
                "--public-key",
                str(key_file),
            ],
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert checked.returncode == 0, checked.stderr
        assert "valid receipt" in checked.stdout
    finally:
        server.stop()
