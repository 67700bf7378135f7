"""Retention through the real ``workmem serve`` process with its in-process worker: a policy set
through the API, data aged in SQL, and the worker's passes purging it while the API says so."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.support.clusters import cluster_url
from tests.support.servers import Server

pytestmark = pytest.mark.e2e


def until(check: Callable[[], Any], what: str, timeout_s: float = 60) -> Any:
    """``check()`` once it is truthy; the worker's passes run every fifth of a second here."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


def purged_total(metrics: str, kind: str) -> float:
    prefix = f'workmem_retention_purged_total{{kind="{kind}"}} '
    line = next((line for line in metrics.splitlines() if line.startswith(prefix)), None)
    return 0.0 if line is None else float(line.removeprefix(prefix))


def test_the_worker_purges_what_the_policy_says_and_expand_reports_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(home, env={"WORKMEM_RETENTION_EVERY_S": "0.2", "WORKMEM_WORKER_POLL_S": "0.1"})
    try:
        server.wait_ready()
        key = (home / "local-api-key").read_text().strip()
        with (
            httpx.Client(
                base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
            ) as http,
            psycopg.connect(cluster_url(home / "pgdata", "workmem"), autocommit=True) as owner,
        ):
            policy = http.put(
                "/v1/tenant/retention",
                json={
                    "archive_messages_days": 30,
                    "idle_session_days": 90,
                    "memory_days": {"preference": 14},
                },
            )
            assert policy.status_code == 200, policy.text
            old = http.post("/v1/sessions", json={"external_id": "old", "user_id": "u"}).json()
            idle = http.post("/v1/sessions", json={"external_id": "idle", "user_id": "u"}).json()
            said = {
                old["id"]: ("Please fix quokka_ledger.py.", "I prefer aisle seats on flights."),
                idle["id"]: ("hi", "I prefer green tea to coffee."),
            }
            for sid, texts in said.items():
                batch = http.post(
                    f"/v1/sessions/{sid}/messages:batch",
                    json={"messages": [{"role": "user", "content": text} for text in texts]},
                )
                assert batch.status_code == 201, batch.text
                done = http.post(
                    f"/v1/sessions/{sid}/commit", json={"keep_recent_count": 0, "wait": True}
                )
                assert done.json()["status"] == "done", done.text
            http.post(f"/v1/sessions/{old['id']}/messages", json={"role": "user", "content": "now"})
            memories = http.get("/v1/memories").json()["items"]
            assert {memory["agent_session_id"] for memory in memories} == {old["id"], idle["id"]}
            found = http.get(
                f"/v1/sessions/{old['id']}/history/search", params={"q": "quokka_ledger"}
            )
            assert [hit["seq"] for hit in found.json()["items"]] == [1]
            before = http.get("/metrics").text

            # The clock moves in SQL: the archive is 31 days old, the other agent session idle
            # for 91 days, the memories past their expiry.
            owner.execute(
                "UPDATE archives SET created_at = now() - interval '31 days'"
                " WHERE agent_session_id = %s",
                (old["id"],),
            )
            owner.execute(
                "UPDATE agent_sessions SET created_at = now() - interval '100 days',"
                " updated_at = now() - interval '91 days' WHERE agent_session_id = %s",
                (idle["id"],),
            )
            owner.execute("UPDATE memories SET expires_at = now() - interval '1 second'")
            assert http.get("/v1/memories").json()["items"] == [], "hidden before any purge"

            expanded = until(
                lambda: (
                    body
                    if (body := http.get(f"/v1/sessions/{old['id']}/archives/1").json())[
                        "messages_purged_at"
                    ]
                    else None
                ),
                "the archive's raw messages purged",
            )
            assert expanded["messages"] == []
            assert expanded["messages_purged_count"] == 2
            assert "purged by the tenant's retention policy" in expanded["messages_note"]
            assert expanded["overview"]
            working_memory = http.get(f"/v1/sessions/{old['id']}/working-memory")
            assert working_memory.status_code == 200
            assert "quokka_ledger.py" in working_memory.text, "the working memory stays"
            found = http.get(
                f"/v1/sessions/{old['id']}/history/search", params={"q": "quokka_ledger"}
            )
            assert found.json()["items"] == []
            live = http.get(f"/v1/sessions/{old['id']}/messages").json()["items"]
            assert [message["seq"] for message in live] == [3]
            until(
                lambda: http.get(f"/v1/sessions/{idle['id']}").status_code == 404,
                "the idle agent session deleted",
            )
            assert http.get(f"/v1/sessions/{old['id']}").status_code == 200
            left = until(
                lambda: (
                    row
                    if (row := owner.execute("SELECT count(*) FROM memories").fetchone()) == (0,)
                    else None
                ),
                "the expired memories deleted",
            )
            assert left == (0,)
            after = http.get("/metrics").text
            for kind, at_least in (
                ("archive_messages", 2),
                ("idle_sessions", 1),
                ("expired_memories", 1),
            ):
                assert purged_total(after, kind) - purged_total(before, kind) >= at_least, kind
    finally:
        server.stop()
