"""``workmem import openviking``: its summary and report, the dry run, one-line errors, and an
import killed part way (SIGKILL) then re-run, which ends exactly like an uninterrupted one."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.db import Database
from tests.importer.conftest import row_counts, snapshot
from tests.support.openviking import SAMPLE, SESSIONS, copy_sample, scaled_workspace
from tests.support.postgres import DatabaseUrls
from tests.support.servers import workmem_command

runner = CliRunner()


@pytest.fixture
def env(database_url: str) -> dict[str, str]:
    # A wide terminal, so that the table's rows are not wrapped where the test reads them.
    return {"DATABASE_URL": database_url, "COLUMNS": "200"}


def new_tenant(env: dict[str, str]) -> str:
    created = runner.invoke(cli, ["tenants", "create", "import"], env=env)
    assert created.exit_code == 0, created.output
    tenant_id: str = json.loads(created.output)["tenant_id"]
    return tenant_id


def test_the_summary_is_printed_and_the_report_written(env: dict[str, str], tmp_path: Path) -> None:
    tenant = new_tenant(env)
    report = tmp_path / "report.json"
    args = ["import", "openviking", str(SAMPLE), "--tenant", tenant, "--report", str(report)]
    result = runner.invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    printed = result.stdout
    assert "3 session folder(s) found" in printed
    assert (
        "[2/3] imported acme/alice/swe-marshmallow-1867: 29 messages (43 stored), 3 archives"
        in printed
    )
    for row in (
        "3 imported of 3 found",
        "87 OpenViking → 109 stored",
        "6 done, 1 failed, 0 pending",
        "4 v2, 1 legacy, 2 none",
    ):
        assert row in printed, row
    written = json.loads(report.read_text())
    assert written["agent_sessions"]["imported"] == 3
    assert written["messages"] == {"openviking": 87, "stored": 109}
    assert written["tool_parts"] == 22
    assert written["problems"] == []
    assert [s["status"] for s in written["sessions"]] == ["imported"] * 3

    again = runner.invoke(cli, args, env=env)
    assert again.exit_code == 0, again.output
    assert "Nothing new to import." in again.stdout
    assert "0 imported of 3 found; 3 already imported" in again.stdout


def test_a_dry_run_prints_the_same_summary_and_writes_nothing(
    env: dict[str, str], database_urls: DatabaseUrls
) -> None:
    tenant = new_tenant(env)
    before = asyncio.run(_counts(database_urls.admin))
    result = runner.invoke(
        cli, ["import", "openviking", str(SAMPLE), "--tenant", tenant, "--dry-run"], env=env
    )
    assert result.exit_code == 0, result.output
    assert asyncio.run(_counts(database_urls.admin)) == before
    assert "dry run: nothing was written" in result.stdout
    assert "3 would be imported of 3 found" in result.stdout
    assert "[1/3] would import acme/alice/locomo-conv26" in result.stdout


async def _counts(url: str) -> dict[str, int]:
    database = Database.from_url(url, pool_size=1)
    try:
        return await row_counts(database)
    finally:
        await database.dispose()


def test_a_session_that_cannot_be_imported_says_why_and_fails_the_run(
    env: dict[str, str],
) -> None:
    tenant = new_tenant(env)
    tight = {**env, "WORKMEM_MAX_MESSAGE_BYTES": "4096"}
    result = runner.invoke(
        cli, ["import", "openviking", str(SAMPLE), "--tenant", tenant], env=tight
    )
    assert result.exit_code == 1
    line = next(row for row in result.stdout.splitlines() if row.startswith("[2/3] "))
    assert line.startswith("[2/3] not imported acme/alice/swe-marshmallow-1867: a tool message of ")
    assert "above WORKMEM_MAX_MESSAGE_BYTES (4096); the session is not imported" in line
    assert "2 imported of 3 found" in result.stdout
    assert "message_too_large" in result.stdout


def test_an_unknown_tenant_is_one_line(env: dict[str, str]) -> None:
    missing = uuid.UUID(int=7)
    result = runner.invoke(
        cli, ["import", "openviking", str(SAMPLE), "--tenant", str(missing)], env=env
    )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"workmem: tenant {missing} does not exist"]
    assert "Traceback" not in result.output


def test_a_folder_that_is_not_a_workspace_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    result = runner.invoke(
        cli, ["import", "openviking", str(tmp_path), "--tenant", str(uuid.uuid4())], env=env
    )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"workmem: {tmp_path} is not an OpenViking workspace: no "
        "viking/<account>/user/<user>/sessions/"
    ]


def test_an_import_killed_part_way_resumes_to_the_same_database(
    env: dict[str, str], tmp_path: Path
) -> None:
    workspace = scaled_workspace(tmp_path / "ws", 60, users=2)
    interrupted, uninterrupted = new_tenant(env), new_tenant(env)
    command = [*workmem_command(), "import", "openviking", str(workspace)]
    process = subprocess.Popen(
        [*command, "--tenant", interrupted],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        if line.startswith("[3/60] "):
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=60)
    process.stdout.close()
    assert process.returncode == -signal.SIGKILL, seen
    stored = asyncio.run(_agent_sessions(env["DATABASE_URL"], interrupted))
    assert 3 <= stored < 60, "the import was stopped part way"

    report = tmp_path / "resumed.json"
    resumed = subprocess.run(
        [*command, "--tenant", interrupted, "--report", str(report)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    figures = json.loads(report.read_text())["agent_sessions"]
    assert (figures["already_imported"], figures["imported"]) == (stored, 60 - stored)

    whole = runner.invoke(cli, [*command[-3:], "--tenant", uninterrupted], env=env)
    assert whole.exit_code == 0, whole.output
    first = asyncio.run(_snapshot(env["DATABASE_URL"], interrupted))
    second = asyncio.run(_snapshot(env["DATABASE_URL"], uninterrupted))
    assert len(first["agent_sessions"]) == 60
    assert first == second


async def _agent_sessions(url: str, tenant: str) -> int:
    return len((await _snapshot(url, tenant))["agent_sessions"])


async def _snapshot(url: str, tenant: str) -> dict[str, list[tuple[object, ...]]]:
    database = Database.from_url(url, pool_size=1)
    try:
        return await snapshot(database, uuid.UUID(tenant))
    finally:
        await database.dispose()


@pytest.mark.parametrize(("first", "second"), [(Path(), Path("viking")), (Path("viking"), Path())])
def test_naming_the_workspace_or_its_viking_folder_is_the_same_import(
    env: dict[str, str], tmp_path: Path, first: Path, second: Path
) -> None:
    tenant = new_tenant(env)
    command = [*workmem_command(), "import", "openviking"]
    imported = subprocess.run(
        [*command, str(SAMPLE / first), "--tenant", tenant],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    assert "3 imported of 3 found" in imported.stdout
    before = asyncio.run(_snapshot(env["DATABASE_URL"], tenant))

    report = tmp_path / "report.json"
    again = subprocess.run(
        [*command, str(SAMPLE / second), "--tenant", tenant, "--report", str(report)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert "0 imported of 3 found; 3 already imported, 0 changed since import" in again.stdout
    written = json.loads(report.read_text())
    assert [s["status"] for s in written["sessions"]] == ["already_imported"] * 3
    assert "delete" not in (again.stdout + again.stderr + report.read_text()).lower()
    assert asyncio.run(_snapshot(env["DATABASE_URL"], tenant)) == before


def test_a_session_that_changed_since_is_reported_without_advice_to_delete(
    env: dict[str, str], tmp_path: Path
) -> None:
    tenant = new_tenant(env)
    workspace = copy_sample(tmp_path / "ws")
    command = [*workmem_command(), "import", "openviking"]
    imported = subprocess.run(
        [*command, str(workspace), "--tenant", tenant],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    before = asyncio.run(_snapshot(env["DATABASE_URL"], tenant))
    messages = workspace / SESSIONS / "locomo-conv26" / "messages.jsonl"
    lines = messages.read_text().splitlines()
    messages.write_text("\n".join(lines[:-1]) + "\n")

    report = tmp_path / "report.json"
    again = subprocess.run(
        [*command, str(workspace / "viking"), "--tenant", tenant, "--report", str(report)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    said = again.stdout + again.stderr + report.read_text()
    assert "2 already imported, 1 changed since import" in again.stdout, said
    assert "delete" not in said.lower()
    written = json.loads(report.read_text())
    changed = [s for s in written["sessions"] if s["status"] == "changed_since_import"]
    assert len(changed) == 1
    assert "nothing in it is removed or replaced" in json.dumps(written)
    assert "--tenant" in json.dumps(written)
    assert asyncio.run(_snapshot(env["DATABASE_URL"], tenant)) == before
