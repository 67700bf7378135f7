"""Every command's first mistakes are one line on stderr saying what to do, never a traceback:
an unreachable server, a URL with /v1 on it, a wrong key, a file that is not there, a database
that is not there, a port already in use. The real ``workmem`` command, as a user runs it."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.support.servers import Server, closed_port, workmem_command

pytestmark = pytest.mark.e2e

CONVERSATION = '[{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]'


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    args: tuple[str, ...]
    says: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("cli-errors") / "home")
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("conversation") / "conversation.json"
    path.write_text(CONVERSATION)
    return path


def run(args: tuple[str, ...], env: dict[str, str], home: Path) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WORKMEM_") and k not in ("DATABASE_URL",)
    }
    environment.update({"WORKMEM_HOME": str(home), "WORKMEM_LOG_JSON": "true", **env})
    return subprocess.run(
        [*workmem_command(), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_one_line(result: subprocess.CompletedProcess[str], says: tuple[str, ...]) -> None:
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("workmem: "), result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    for fragment in says:
        assert fragment in result.stderr, result.stderr


def server_cases(server: Server, key: str, conversation: Path) -> list[Case]:
    base = server.base_url
    dead = f"http://127.0.0.1:{closed_port()}"
    replay = ("replay", str(conversation))
    return [
        Case("unreachable server", (*replay, "--url", dead, "--key", key), ("cannot reach", dead)),
        Case(
            "URL ending in /v1",
            (*replay, "--url", f"{base}/v1", "--key", key),
            ("without /v1", f"--url {base}"),
        ),
        Case(
            "URL ending in /api/v1/",
            (*replay, "--url", f"{base}/api/v1/", "--key", key),
            ("without /api/v1", f"--url {base}"),
        ),
        Case(
            "URL of no workmem",
            (*replay, "--url", f"{base}/elsewhere", "--key", key),
            ("serves no workmem API", "http://127.0.0.1:8000"),
        ),
        Case("URL without a scheme", (*replay, "--url", base[7:], "--key", key), ("http(s)",)),
        Case(
            "wrong key",
            (*replay, "--url", base, "--key", "wm_wrong"),
            ("refused the API key (401)", "--key"),
        ),
        Case(
            "missing conversation file",
            ("replay", str(conversation.parent / "none.json"), "--url", base, "--key", key),
            ("none.json", "cannot be read"),
        ),
        Case(
            "eval against an unreachable server",
            ("eval", "--url", dead, "--key", key, "--limit", "1"),
            ("cannot reach", dead),
        ),
        Case(
            "eval with a wrong key",
            ("eval", "--url", base, "--key", "wm_wrong", "--limit", "1"),
            ("refused the API key (401)",),
        ),
        Case(
            "missing ops file",
            ("wm", "merge", "--ops", str(conversation.parent / "ops.json")),
            ("ops.json", "is not a file", "workmem wm merge --help"),
        ),
        Case(
            "missing messages file",
            ("wm", "extract", "--messages", str(conversation.parent / "m.json")),
            ("m.json", "is not a file"),
        ),
        Case("unknown command", ("nosuch",), ("No such command", "workmem --help")),
        Case("missing argument", ("replay",), ("Missing argument", "workmem replay --help")),
    ]


def test_commands_against_a_server_fail_in_one_line(
    server: Server, conversation: Path, tmp_path: Path
) -> None:
    key = (server.home / "local-api-key").read_text().strip()
    failures = []
    for case in server_cases(server, key, conversation):
        result = run(case.args, case.env, tmp_path / "home")
        try:
            assert_one_line(result, case.says)
        except AssertionError as error:
            failures.append(f"{case.name}: {error}")
    assert failures == []


@pytest.mark.parametrize(
    "args",
    [
        ("tenants", "create", "acme"),
        ("db", "current"),
        ("db", "upgrade"),
        ("worker",),
        ("pending-tokens", "check"),
        ("serve", "--port", "0"),
    ],
    ids=lambda args: " ".join(args),
)
def test_a_database_that_is_not_there_is_one_line(
    args: tuple[str, ...], database_url: str, tmp_path: Path
) -> None:
    missing = make_url(database_url).set(database="no_such_database", password="secret")
    url = missing.render_as_string(hide_password=False)
    env = {"DATABASE_URL": url, "WORKMEM_ADMIN_DATABASE_URL": url}
    result = run(args, env, tmp_path / "home")
    assert_one_line(result, ("no_such_database", "does not exist", "check DATABASE_URL"))
    assert "secret" not in result.stderr


def test_serve_on_a_busy_port_fails_before_any_work(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        home = tmp_path / "home"
        result = run(("serve", "--port", str(port)), {}, home)
    assert_one_line(result, (f"127.0.0.1:{port} is already in use", "--port"))
    assert result.stdout == ""
    assert not home.exists(), "no embedded database was started, no key written"
