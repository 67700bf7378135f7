"""What operators see (defect 9 and the observability list): one-line CLI errors, `db current`
on a fresh database, `/metrics` without a redirect and with every metric, JSON logs naming the
request and tenant but never content or keys, and tenant admins managing their own keys."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import uuid

import httpx
import pytest

from app.observability import JsonFormatter
from tests.conftest import TenantKeys
from tests.support.api import create_session
from tests.support.postgres import PostgresForTests
from tests.support.servers import closed_port, workmem_command


def workmem(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*workmem_command(), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_key_for_an_unknown_tenant_is_one_line(database_url: str) -> None:
    result = workmem(
        "keys", "create", "--tenant", str(uuid.uuid4()), env={"DATABASE_URL": database_url}
    )
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unreachable_database_is_one_line() -> None:
    url = f"postgresql://workmem_app:secret@127.0.0.1:{closed_port()}/workmem"
    for args in (("tenants", "create", "x"), ("db", "upgrade")):
        result = workmem(*args, env={"DATABASE_URL": url, "WORKMEM_ADMIN_DATABASE_URL": url})
        assert result.returncode == 1, result
        assert result.stderr.startswith("workmem: "), result.stderr
        assert result.stderr.strip().count("\n") == 0, result.stderr
        assert "secret" not in result.stderr


def test_db_current_on_a_fresh_database_says_so(postgres: PostgresForTests) -> None:
    url = postgres.create_database("wmfresh")
    result = workmem("db", "current", env={"DATABASE_URL": url, "WORKMEM_ADMIN_DATABASE_URL": url})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "no revision applied"


async def test_metrics_answer_without_a_redirect_and_name_every_series(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    agent_session_id = await create_session(client, tenant)
    await client.post(
        f"/v1/sessions/{agent_session_id}/messages",
        json={"role": "user", "content": "x"},
        headers=tenant.write,
    )
    await client.post(
        f"/v1/sessions/{agent_session_id}/commit",
        json={"keep_recent_count": 0, "wait": True},
        headers=tenant.write,
    )
    response = await client.get("/metrics", follow_redirects=False)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    for name in (
        "workmem_http_request_duration_seconds",
        'workmem_archive_queue_archives{status="pending"}',
        'workmem_archive_queue_oldest_age_seconds{status="pending"}',
        'workmem_archives_finished_total{status="done"}',
        "workmem_archive_phase2_duration_seconds",
        "workmem_guard_decisions_total",
        "workmem_archives_by_generator_total",
        "workmem_model_call_duration_seconds",
        "workmem_model_call_errors_total",
        'workmem_db_pool_connections{pool="transactions",state="in_use"}',
        'workmem_db_pool_connections{pool="appends",state="size"}',
        "workmem_limited_requests_total",
        "workmem_idempotent_replays_total",
        "workmem_metrics_database_up 1.0",
    ):
        assert name in text, name
    assert str(tenant.tenant_id) not in text, "no tenant ids in labels"


async def test_logs_name_the_request_and_tenant_never_content_or_keys(
    client: httpx.AsyncClient, tenant: TenantKeys, caplog: pytest.LogCaptureFixture
) -> None:
    marker = f"secret-content-{uuid.uuid4().hex}"
    formatter = JsonFormatter()
    with caplog.at_level(logging.DEBUG):
        agent_session_id = await create_session(client, tenant)
        for body in (
            {"role": "user", "content": marker},
            {"role": "user", "content": marker, "metadata": {"v": marker, "deep": {"x": [1]}}},
            {"role": "robot", "content": marker},
        ):
            await client.post(
                f"/v1/sessions/{agent_session_id}/messages",
                json=body,
                headers={**tenant.write, "X-Request-ID": "req-42"},
            )
    lines = [json.loads(formatter.format(record)) for record in caplog.records]
    access = [line for line in lines if line.get("logger") == "workmem.access"]
    assert access, "an access line per request at DEBUG"
    assert {line.get("request_id") for line in access} >= {"req-42"}
    assert str(tenant.tenant_id) in {line.get("tenant_id") for line in access}
    everything = "\n".join(json.dumps(line) for line in lines)
    assert marker not in everything
    assert tenant.writer not in everything
    assert tenant.writer.split("_")[2] not in everything, "not even the key's secret part"


async def test_the_request_id_is_echoed(client: httpx.AsyncClient) -> None:
    own = await client.get("/healthz", headers={"X-Request-ID": "abc-1"})
    assert own.headers["x-request-id"] == "abc-1"
    made = await client.get("/healthz", headers={"X-Request-ID": "no spaces allowed"})
    assert made.headers["x-request-id"] != "no spaces allowed"
    assert len(made.headers["x-request-id"]) == 32


async def test_a_tenant_admin_manages_its_own_keys(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    admin = TenantKeys.headers(tenant.admin)
    issued = await client.post("/v1/keys", json={"role": "reader", "name": "ci"}, headers=admin)
    assert issued.status_code == 201, issued.text
    new_key = issued.json()
    assert new_key["tenant_id"] == str(tenant.tenant_id)
    as_new = TenantKeys.headers(new_key["key"])
    assert (await client.get("/v1/sessions", headers=as_new)).status_code == 200
    listed = await client.get("/v1/keys", headers=admin)
    assert new_key["api_key_id"] in [key["api_key_id"] for key in listed.json()["items"]]
    assert "key" not in listed.json()["items"][0], "a listed key never carries its secret"
    others = await client.get("/v1/keys", headers=TenantKeys.headers(other_tenant.admin))
    assert new_key["api_key_id"] not in [key["api_key_id"] for key in others.json()["items"]]
    foreign = await client.delete(
        f"/v1/keys/{new_key['api_key_id']}", headers=TenantKeys.headers(other_tenant.admin)
    )
    assert foreign.status_code == 404, "another tenant's key is not found"
    for role_key in (tenant.writer, tenant.reader):
        refused = await client.post("/v1/keys", json={}, headers=TenantKeys.headers(role_key))
        assert refused.status_code == 403
        assert (
            await client.get("/v1/keys", headers=TenantKeys.headers(role_key))
        ).status_code == 403
    revoked = await client.delete(f"/v1/keys/{new_key['api_key_id']}", headers=admin)
    assert revoked.status_code == 204
    assert (await client.get("/v1/sessions", headers=as_new)).status_code == 401
