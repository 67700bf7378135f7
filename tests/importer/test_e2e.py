"""End to end: `workmem import openviking` into the embedded database of a running
`workmem serve`, then working on through the real server's HTTP API."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.wm.items import split_items
from app.wm.sections import SECTIONS, parse
from tests.context.helpers import assert_tool_groups_whole
from tests.support.fake_openai import check_chat_request
from tests.support.openviking import SAMPLE, SESSIONS
from tests.support.servers import Server, workmem_command

pytestmark = pytest.mark.e2e


def workmem(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "WORKMEM_DATABASE_URL")}
    env.update({"WORKMEM_HOME": str(home), "COLUMNS": "200"})
    return subprocess.run(
        [*workmem_command(), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def sections_of(path: Path) -> dict[str, str]:
    document = parse(path.read_text())
    return {section.value: document.sections[section] for section in SECTIONS}


def test_import_then_keep_working_against_the_real_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(home)
    try:
        server.wait_ready()
        created = workmem(home, "tenants", "create", "upgraded")
        assert created.returncode == 0, created.stderr
        tenant = json.loads(created.stdout)["tenant_id"]
        key = json.loads(workmem(home, "keys", "create", "--tenant", tenant).stdout)["key"]
        imported = workmem(home, "import", "openviking", str(SAMPLE), "--tenant", tenant)
        assert imported.returncode == 0, imported.stderr
        assert "87 OpenViking → 109 stored" in imported.stdout
        assert "Traceback" not in imported.stderr

        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as http:
            listed = http.get("/v1/sessions").json()["items"]
            ids = {item["external_id"]: item["id"] for item in listed}
            assert sorted(ids) == [
                "locomo-conv26",
                "swe-marshmallow-1867",
                "tau-airline-task0-trial0",
            ]

            swe = ids["swe-marshmallow-1867"]
            prior = sections_of(
                SAMPLE / SESSIONS / "swe-marshmallow-1867/history/archive_003/.overview.md"
            )
            served = http.get(f"/v1/sessions/{swe}/working-memory").json()
            assert served["sections"] == prior

            context: dict[str, Any] = http.get(
                f"/v1/sessions/{swe}/context", params={"token_budget": 8000}
            ).json()
            system = {"role": "system", "content": context["system_prompt_addition"]}
            check_chat_request({"model": "m", "messages": [system, *context["messages"]]})
            assert_tool_groups_whole(context["messages"])
            assert sum(m["role"] == "tool" for m in context["messages"]) == 2

            http.post(
                f"/v1/sessions/{swe}/messages",
                json={
                    "role": "user",
                    "content": "Good. Now run the tests in tests/test_fields.py.",
                },
            )
            committed = http.post(
                f"/v1/sessions/{swe}/commit", json={"keep_recent_count": 0, "wait": True}
            ).json()
            assert committed["status"] == "done", committed
            after = committed["working_memory"]["sections"]
            for section in ("Files & Context", "Errors & Corrections"):
                assert set(split_items(prior[section])) <= set(split_items(after[section]))
    finally:
        server.stop()
