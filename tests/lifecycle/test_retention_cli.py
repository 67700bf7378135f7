"""``workmem retention`` against the real database, as the operator runs it: the policy shown
and changed limit by limit, and a refused limit as one line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import text

from app.db import SERVICE_KEY_VARIABLE, Database
from tests.conftest import TenantKeys, make_tenant
from tests.support.postgres import DatabaseUrls
from tests.support.servers import workmem_command


def workmem(where: tuple[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    database_url, home = where
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WORKMEM_") and k not in ("DATABASE_URL",)
    }
    environment.update(
        {
            "DATABASE_URL": database_url,
            "WORKMEM_HOME": str(home),
            SERVICE_KEY_VARIABLE: os.environ[SERVICE_KEY_VARIABLE],
        }
    )
    return subprocess.run(
        [*workmem_command(), "retention", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_operator_sets_one_limit_at_a_time(
    tenant: TenantKeys, database_url: str, tmp_path: Path
) -> None:
    where = (database_url, tmp_path)
    tenant_id = str(tenant.tenant_id)
    shown = workmem(where, "show", "--tenant", tenant_id)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == {
        "tenant_id": tenant_id,
        "archive_messages_days": None,
        "idle_session_days": None,
        "memory_days": {},
        "updated_at": None,
        "updated_by": None,
    }
    first = workmem(
        where, "set", "--tenant", tenant_id, "--archive-messages-days", "30",
        "--memory-days", "event=7", "--memory-days", "lesson=365"
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    second = workmem(
        where, "set", "--tenant", tenant_id, "--idle-session-days", "90", "--memory-days", "event=off"
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    policy = json.loads(workmem(where, "show", "--tenant", tenant_id).stdout)
    assert (policy["archive_messages_days"], policy["idle_session_days"]) == (30, 90)
    assert policy["memory_days"] == {"lesson": 365}
    assert policy["updated_at"] is not None
    assert policy["updated_by"] is None
    off = workmem(where, "set", "--tenant", tenant_id, "--archive-messages-days", "off")
    assert json.loads(off.stdout)["archive_messages_days"] is None


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--idle-session-days", "0"), "idle_session_days must be at least 1 day"),
        (("--idle-session-days", "-3"), "idle_session_days must be at least 1 day"),
        (("--archive-messages-days", "36501"), "at most 36500 days"),
        (("--archive-messages-days", "soon"), "a whole number of days or 'off'"),
        (("--memory-days", "mood=3"), "unknown category 'mood'"),
        (("--memory-days", "event"), "CATEGORY=DAYS"),
    ],
)
def test_a_refused_limit_is_one_line_and_changes_nothing(
    tenant: TenantKeys, database_url: str, tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    where = (database_url, tmp_path)
    tenant_id = str(tenant.tenant_id)
    assert workmem(where, "set", "--tenant", tenant_id, "--idle-session-days", "5").returncode == 0
    refused = workmem(where, "set", "--tenant", tenant_id, *args)
    assert refused.returncode == 1, refused
    assert refused.stderr.startswith("workmem: ")
    assert refused.stderr.count("\n") == 1
    assert says in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    policy = json.loads(workmem(where, "show", "--tenant", tenant_id).stdout)
    assert policy["idle_session_days"] == 5
    assert policy["archive_messages_days"] is None


def test_an_unknown_tenant_is_one_line(database_url: str, tmp_path: Path) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    refused = workmem((database_url, tmp_path), "show", "--tenant", missing)
    assert refused.returncode == 1
    assert refused.stderr == f"workmem: tenant {missing} does not exist\n"


async def test_the_operator_runs_a_pass_now(
    own_urls: DatabaseUrls, own_database: Database, own_admin_database: Database, tmp_path: Path
) -> None:
    """``workmem retention run`` purges every tenant's due rows at once and prints what went."""
    keys = await make_tenant(own_database, "run-now")
    async with own_admin_database.unscoped() as db:
        await db.execute(
            text(
                "INSERT INTO agent_sessions (tenant_id, created_at, updated_at)"
                " VALUES (:tenant_id, now() - interval '3 days', now() - interval '3 days'),"
                " (:tenant_id, now(), now())"
            ),
            {"tenant_id": keys.tenant_id},
        )
    where = (own_urls.app, tmp_path)
    tenant_id = str(keys.tenant_id)
    assert workmem(where, "set", "--tenant", tenant_id, "--idle-session-days", "2").returncode == 0
    ran = workmem(where, "run", "--batch", "10")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {
        "tenants": 1,
        "archives": 0,
        "archive_messages": 0,
        "idle_sessions": 1,
        "expired_memories": 0,
        "failed_tenants": 0,
    }
    async with own_admin_database.unscoped() as db:
        left = await db.scalar(text("SELECT count(*) FROM agent_sessions"))
    assert left == 1
    again = workmem(where, "run")
    assert json.loads(again.stdout)["idle_sessions"] == 0
