"""The `workmem` command against a real database: tenants, keys, maintenance, wm debugging."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from app.cli import cli
from tests.support.archives import FIRST
from tests.support.postgres import DatabaseUrls

runner = CliRunner()


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {"DATABASE_URL": database_url, "WORKMEM_HOME": str(tmp_path / "home")}


def run(args: list[str], env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    result = runner.invoke(cli, args, env=env, input=stdin)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_tenants_keys_and_revocation(env: dict[str, str]) -> None:
    tenant = json.loads(run(["tenants", "create", "acme"], env))
    key = json.loads(
        run(["keys", "create", "--tenant", tenant["tenant_id"], "--role", "reader"], env)
    )
    assert key["key"].startswith("wm_")
    assert key["role"] == "reader"
    revoked = json.loads(run(["keys", "revoke", key["api_key_id"]], env))
    assert revoked["api_key_id"] == key["api_key_id"]
    missing = runner.invoke(cli, ["keys", "create", "--tenant", key["api_key_id"]], env=env)
    assert missing.exit_code != 0


def test_pending_tokens_check_reports_and_repairs_drift(
    env: dict[str, str], database_urls: DatabaseUrls
) -> None:
    # The drift is planted behind the service's back, by the schema owner.
    plain = make_url(database_urls.admin).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(plain, autocommit=True) as connection:
        tenant_id = connection.execute(
            "INSERT INTO tenants (name) VALUES ('drift') RETURNING tenant_id"
        ).fetchone()[0]  # type: ignore[index]
        connection.execute(
            "INSERT INTO agent_sessions (tenant_id, pending_tokens) VALUES (%s, 7)", (tenant_id,)
        )
    result = runner.invoke(cli, ["pending-tokens", "check"], env=env)
    assert result.exit_code == 1
    drifted = json.loads(result.output)["drifted"]
    assert [
        (d["stored"], d["recomputed"]) for d in drifted if d["tenant_id"] == str(tenant_id)
    ] == [(7, 0)]
    run(["pending-tokens", "check", "--repair"], env)
    after = json.loads(run(["pending-tokens", "check"], env))
    assert after["drifted"] == []
    assert after["checked"] >= 1


def test_db_current_and_archives_retry(env: dict[str, str]) -> None:
    run(["db", "current"], env)
    assert json.loads(run(["archives", "retry", "--archive-seq", "999999"], env)) == {
        "requeued": []
    }


def test_wm_merge_prints_decisions(tmp_path: Path) -> None:
    prior = tmp_path / "prior.md"
    prior.write_text(FIRST)
    ops = tmp_path / "ops.json"
    ops.write_text(
        json.dumps({"sections": {"Files & Context": {"op": "UPDATE", "content": "- x.py"}}})
    )
    report = json.loads(run(["wm", "merge", "--prior", str(prior), "--ops", str(ops)]))
    files = next(d for d in report["decisions"] if d["section"] == "Files & Context")
    assert files["reason"] == "files_path_regression"
    assert "services/billing/models.py" in report["sections"]["Files & Context"]
    assert "x.py" in report["sections"]["Files & Context"]
    assert report["preamble"] == ""


def test_wm_merge_recovers_raw_arguments_from_stdin(tmp_path: Path) -> None:
    raw = '{"sections": {"Current State": {"op": "update", "content": "Half'
    ops = tmp_path / "raw.txt"
    ops.write_text(raw)
    report = json.loads(run(["wm", "merge", "--ops", str(ops)]))
    assert all(d["reason"] == "unrecoverable_arguments" for d in report["decisions"])
    truncated = (
        '{"sections": {"Current State": {"op": "UPDATE", "content": "Done."}, "Task & Goals": {"op'
    )
    from_stdin = json.loads(run(["wm", "merge", "--ops", "-"], stdin=truncated))
    assert from_stdin["sections"]["Current State"] == "Done."


def test_wm_extract(tmp_path: Path) -> None:
    messages = tmp_path / "m.json"
    messages.write_text(
        json.dumps(
            [
                {"role": "user", "content": "Fix the bug in app/models/user.py please."},
                {"role": "assistant", "content": "Traceback: KeyError: 'email'"},
            ]
        )
    )
    report = json.loads(run(["wm", "extract", "--messages", str(messages)]))
    assert "app/models/user.py" in json.dumps(report)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert runner.invoke(cli, ["wm", "extract", "--messages", str(bad)]).exit_code != 0


def test_a_fresh_embedded_home_takes_operator_commands_before_any_serve(tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"
    env = {"WORKMEM_HOME": str(home), "DATABASE_URL": "", "WORKMEM_DATABASE_URL": ""}
    tenant = json.loads(run(["tenants", "create", "first"], env))
    key = json.loads(run(["keys", "create", "--tenant", tenant["tenant_id"]], env))
    assert key["key"].startswith("wm_")
    assert (home / "pgdata" / "PG_VERSION").is_file()
