"""``workmem replay`` and ``workmem eval``: in this process on a database, against the real
server, and their one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli
from tests.support.datasets import DATASETS
from tests.support.servers import Server, workmem_command

runner = CliRunner()

CONVERSATION = [
    {"role": "user", "content": "Fix the crash in app/models/user.py. Never touch prod."},
    {"role": "assistant", "content": "Traceback ends in KeyError: email. I will add a default."},
    {"role": "user", "content": "Good. Is a migration needed?"},
    {"role": "assistant", "content": "No migration: the column exists."},
    {"role": "user", "content": "Then ship it."},
]


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {"DATABASE_URL": database_url, "WORKMEM_HOME": str(tmp_path / "home")}


@pytest.fixture
def conversation_file(tmp_path: Path) -> Path:
    path = tmp_path / "conversation.jsonl"
    path.write_text("\n".join(json.dumps(message) for message in CONVERSATION) + "\n")
    return path


def writer_key(env: dict[str, str]) -> str:
    tenant = json.loads(runner.invoke(cli, ["tenants", "create", "replay"], env=env).output)
    created = runner.invoke(cli, ["keys", "create", "--tenant", tenant["tenant_id"]], env=env)
    key: str = json.loads(created.output)["key"]
    return key


def test_replay_prints_the_working_memory_and_the_decisions(
    env: dict[str, str], conversation_file: Path
) -> None:
    key = writer_key(env)
    args = ["replay", str(conversation_file), "--every", "2", "--keep", "1", "--key", key]
    result = runner.invoke(cli, args, env=env)
    assert result.exit_code == 0, (result.output, result.exception)
    output = result.output
    assert "5 messages, 3 archives" in output
    assert (
        "## Errors & Corrections\n- Assistant reported: Traceback ends in KeyError: email."
        in output
    )
    assert "Archives and guard decisions" in output
    assert "archive 1: messages 1-1 done" in output, "one line per archive off a terminal"
    again = runner.invoke(cli, [*args, "--external-id", "fixed"], env=env)
    assert again.exit_code == 0
    taken = runner.invoke(cli, [*args, "--external-id", "fixed"], env=env)
    assert taken.exit_code == 1
    assert taken.output.strip().startswith("workmem: creating the agent session answered 409")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "yaml"], "--format must be one of openai, locomo, swe-agent, tau-bench"),
        (["--only", "2"], "--only 2: "),
        (["--url", "http://127.0.0.1:9"], "--url needs --key"),
        ([], "with DATABASE_URL set, --key names the tenant"),
    ],
)
def test_replay_usage_errors_are_one_line(
    env: dict[str, str], conversation_file: Path, args: list[str], message: str
) -> None:
    result = runner.invoke(cli, ["replay", str(conversation_file), *args], env=env)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_replay_of_a_file_that_is_no_conversation(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"title": "notes"}')
    result = runner.invoke(cli, ["replay", str(path)], env=env)
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"workmem: {path}: not a known conversation format (openai, locomo, swe-agent, "
        "tau-bench); pass --format"
    )


def test_eval_says_loudly_which_sets_it_did_not_find(tmp_path: Path) -> None:
    result = runner.invoke(cli, ["eval", "--datasets", str(tmp_path)])
    assert result.exit_code == 1
    assert "locomo NOT FOUND" in result.output
    assert f"workmem: no evaluation set found under {tmp_path}" in result.output


@pytest.mark.skipif(not DATASETS.is_dir(), reason=f"dataset folder {DATASETS} is not present")
def test_eval_of_one_set_writes_json_and_markdown(tmp_path: Path) -> None:
    out, table = tmp_path / "eval.json", tmp_path / "eval.md"
    args = ["eval", "--sets", "swe-agent", "--limit", "2", "--json", str(out)]
    result = runner.invoke(cli, [*args, "--markdown", str(table), "--budgets", "1000,3000"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "evaluation: using swe-agent from" in result.output
    body = json.loads(out.read_text())
    assert body["generator"] == "offline"
    assert body["budgets"] == [1000, 3000]
    assert list(body["datasets"]["found"]) == ["swe-agent"]
    assert len(body["conversations"]) == 2
    assert {t["name"] for t in body["targets"]} >= {"protected-item loss"}
    assert table.read_text().startswith("### Retention (offline)")
    bad = runner.invoke(cli, ["eval", "--budgets", "many"])
    assert bad.exit_code == 2
    assert "--budgets takes whole numbers" in bad.output


@pytest.mark.e2e
def test_replay_against_the_real_server(tmp_path: Path, conversation_file: Path) -> None:
    server = Server(tmp_path / "home")
    try:
        server.wait_ready()
        key = (tmp_path / "home" / "local-api-key").read_text().strip()
        done = subprocess.run(
            [*workmem_command(), "replay", str(conversation_file), "--every", "2", "--keep", "1",
             "--url", server.base_url, "--key", key],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "# Working Memory" in done.stdout
        assert "- Question from User: Is a migration needed?" not in done.stdout, "answered"
        assert "archive 3: messages 4-4 done" in done.stdout
    finally:
        server.stop()


@pytest.mark.e2e
def test_replay_into_the_embedded_database_by_default(
    tmp_path: Path, conversation_file: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "WORKMEM_DATABASE_URL")}
    env["WORKMEM_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [*workmem_command(), "replay", str(conversation_file), "--every", "2", "--keep", "1"],
        capture_output=True, text=True, timeout=180, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "5 messages, 3 archives" in done.stdout
    assert (tmp_path / "home" / "local-api-key").is_file(), "the local key, as serve makes it"
