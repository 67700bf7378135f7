"""A data directory made by the previous embedded default (PostgreSQL 16, ``pgserver``): the
service refuses it in one line naming the upgrade command, the command carries it across to the
bundled PostgreSQL with a step-by-step display, and the real server reads the data back."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import httpx
from asgi_lifespan import LifespanManager

from app import migrations
from app.config import Settings
from app.db import Database, login_url, normalize_url
from app.embedded import UPGRADE_COMMAND, bundled_major
from app.main import create_app
from app.tenancy import service as tenancy
from app.tenancy.principal import Role
from tests.support.clusters import register
from tests.support.servers import Server, free_port, workmem_command

MESSAGES = [
    {"role": "user", "content": "Keep the staging database; never drop it."},
    {"role": "assistant", "content": "Noted: staging stays. Migrating users.email to NOT NULL."},
    {"role": "user", "content": "Ünïcode survives too: ✓"},
]


async def write_through_the_app(url: str) -> tuple[str, str]:
    """A tenant, a key and an agent session with messages, written through the app; returns the
    key and the session id."""
    database = Database.from_url(url, pool_size=2)
    try:
        async with database.unscoped() as db:
            tenant = await tenancy.create_tenant(db, "before-the-upgrade")
            _, key = await tenancy.issue_key(db, tenant.tenant_id, role=Role.WRITER)
        app = create_app(
            Settings(database_url=url, worker_enabled=False, prepare_idle_s=0), database=database
        )
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            LifespanManager(app) as manager,
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=manager.app), base_url="http://old"
            ) as http,
        ):
            created = await http.post("/v1/sessions", json={"external_id": "kept"}, headers=headers)
            assert created.status_code == 201, created.text
            session_id = created.json()["id"]
            added = await http.post(
                f"/v1/sessions/{session_id}/messages:batch",
                json={"messages": MESSAGES},
                headers=headers,
            )
            assert added.status_code in (200, 201), added.text
    finally:
        await database.dispose()
    return key, session_id


def environment_for(home: Path) -> dict[str, str]:
    kept = {
        k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "WORKMEM_DATABASE_URL")
    }
    return {**kept, "WORKMEM_HOME": str(home)}


def upgrade(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*workmem_command(), "db", "upgrade-cluster"],
        env=environment_for(home),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def make_old_cluster(home: Path) -> tuple[str, str]:
    """The previous default's cluster, migrated and holding data, stopped again; while it still
    runs, the upgrade refuses to touch it."""
    from pgserver.postgres_server import get_server

    data_dir = home / "pgdata"
    server = get_server(register(data_dir), cleanup_mode="stop")
    try:
        server.psql('CREATE DATABASE "workmem";')
        admin = normalize_url(str(server.get_uri("workmem")))
        migrations.upgrade(admin)
        written = asyncio.run(write_through_the_app(login_url(admin)))
        running = upgrade(home)
        assert running.returncode == 1
        [line] = running.stderr.strip().splitlines()
        assert line.startswith(f"workmem: upgrade stopped, {data_dir} is unchanged: ")
        assert line.endswith("is running on " + str(data_dir) + ": stop workmem first")
        return written
    finally:
        server.cleanup()


def test_a_cluster_of_the_previous_default_is_refused_then_carried_across(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    data_dir = home / "pgdata"
    key, session_id = make_old_cluster(home)
    assert (data_dir / "PG_VERSION").read_text().strip() == "16"
    environment = environment_for(home)

    refused = subprocess.run(
        [*workmem_command(), "serve", "--port", str(free_port())],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 1
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("workmem: the data directory ")
    assert f"PostgreSQL 16 and the embedded server is PostgreSQL {bundled_major()}" in line
    assert f"run `{UPGRADE_COMMAND}`" in line

    upgraded = upgrade(home)
    assert upgraded.returncode == 0, upgraded.stderr
    steps = [line for line in upgraded.stderr.splitlines() if line.startswith("workmem: [")]
    assert [step.split("]")[0] for step in steps] == [f"workmem: [{n}/6" for n in range(1, 7)]
    kept = home / "pgdata.pg16"
    assert (kept / "PG_VERSION").read_text().strip() == "16"
    assert (data_dir / "PG_VERSION").read_text().strip() == str(bundled_major())

    again = upgrade(home)
    assert again.returncode == 0
    assert "nothing to do" in again.stderr

    server = Server(home)
    try:
        server.wait_ready()
        read = httpx.get(
            f"{server.base_url}/v1/sessions/{session_id}/messages",
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        )
        assert read.status_code == 200, read.text
        assert [(m["role"], m["message"]["content"]) for m in read.json()["items"]] == [
            (m["role"], m["content"]) for m in MESSAGES
        ]
    finally:
        server.stop()
