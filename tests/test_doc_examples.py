"""Every shell example of the README and the guides runs as written against the real server.

Each ```sh block is either run — in document order, in one bash per document (they share
variables), against ``workmem serve`` on its own embedded database, with ``curl`` failing on
any 4xx/5xx answer — or matches one of the stated reasons it is not (it installs the project, it
is a template with placeholders, it needs a database role or a benchmark run of minutes, each
tested elsewhere). A new block that is neither fails the test. Only the address differs: the
server listens on a free port instead of 8000, and ``~`` is the server's home; a guide whose
examples use variables it asks the reader to set (a session, a key) gets them set first.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.servers import Server

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))
ADDRESS = "http://127.0.0.1:8000"

NOT_RUN = {
    "installs the project": re.compile(r"^(python3 -m venv|pip install)", re.M),
    "a template: <placeholders> or … stand for your values": re.compile(r"<[a-z][^>]*>|…"),
    "a query as an auditor's database login (the guide's queries run in tests/audit)": re.compile(
        r"^psql ", re.M
    ),
    "the benchmark run (minutes; its figures are checked by tests/test_bench_rows.py)": re.compile(
        r"^python bench/run_all\.py", re.M
    ),
}

# What a guide asks the reader to have set before its examples, set as it says.
PRELUDES = {
    "docs/lifecycle.md": f"""
WORKMEM={ADDRESS}
WRITER_KEY=$(cat ~/.local/share/workmem/local-api-key)
ADMIN_KEY=$WRITER_KEY
H=(-H "Authorization: Bearer $WRITER_KEY" -H 'content-type: application/json')
SESSION=$(curl -s "${{H[@]}}" -d '{{}}' $WORKMEM/v1/sessions | jq -r .id)
curl -s "${{H[@]}}" $WORKMEM/v1/sessions/$SESSION/messages:batch -d '{{"messages": [
  {{"role": "user", "content": "Deploy the fix."}},
  {{"role": "assistant", "content": "Which environment?"}},
  {{"role": "user", "content": "Staging. password=hunter2"}}]}}' > /dev/null
ADMIN_KEY=$WRITER_KEY
READER_KEY=$WRITER_KEY
curl -s "${{H[@]}}" -d '{{"user_id": "carol@example.com"}}' $WORKMEM/v1/sessions > /dev/null
""",
}

# What the walkthrough's answers must show: the README says what each command gives.
EXPECTED = {
    "README.md": (
        "## Task & Goals",  # the working memory after the first commit
        "Never touch prod",
        "tabs",  # the memory search finds the preference
        "Never deploy on Fridays",  # the text pin
        "Fix the crash in app/models/user.py. Never touch prod.",  # the pinned message's text
    ),
    "docs/integrations.md": ('"secret":"whsec_',),
    "docs/lifecycle.md": ('"seq":3', '"already_redacted":false', '"archive_messages_days":30'),
}


@dataclass(frozen=True, slots=True)
class Block:
    document: str
    line: int
    text: str

    def reason_not_run(self) -> str | None:
        code = re.sub(r"(^|\s)#.*$", "", self.text, flags=re.M)  # comments may elide
        return next((why for why, rule in NOT_RUN.items() if rule.search(code)), None)


def shell_blocks(document: str) -> list[Block]:
    text = (ROOT / document).read_text()
    return [
        Block(document, text.count("\n", 0, found.start()) + 1, found.group(1))
        for found in re.finditer(r"```(?:sh|bash|shell)\n(.*?)```", text, re.S)
    ]


def runnable(document: str) -> list[Block]:
    return [block for block in shell_blocks(document) if block.reason_not_run() is None]


@pytest.fixture(scope="module")
def user_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reader")


@pytest.fixture(scope="module")
def server(user_home: Path) -> Iterator[Server]:
    home = user_home / ".local" / "share" / "workmem"
    home.parent.mkdir(parents=True)
    # The webhooks guide subscribes a receiver on this machine, as it says to try it.
    running = Server(home, env={"WORKMEM_WEBHOOKS_ALLOW_PRIVATE": "true"})
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()


def test_every_shell_block_is_run_or_says_why_not() -> None:
    blocks = [block for document in DOCUMENTS for block in shell_blocks(document)]
    run = [block for block in blocks if block.reason_not_run() is None]
    assert all(ADDRESS in PRELUDES.get(block.document, block.text) for block in run), [
        f"{block.document}:{block.line}"
        for block in run
        if ADDRESS not in PRELUDES.get(block.document, block.text)
    ]
    assert {block.document for block in run} == set(EXPECTED)


def test_the_readme_says_what_its_commands_need() -> None:
    readme = (ROOT / "README.md").read_text()
    walkthrough = readme[: readme.index("KEY=$(cat ~/.local/share/workmem/local-api-key)")]
    for needed in ("`bash`", "`jq`", "Chromium", "/usr/bin/chromium"):
        assert needed in walkthrough, needed


@pytest.mark.parametrize("document", sorted(EXPECTED))
def test_the_examples_run_as_written(document: str, server: Server, user_home: Path) -> None:
    parts = ["set -euo pipefail", 'curl() { command curl --fail-with-body --show-error "$@"; }']
    parts.append(PRELUDES.get(document, "").replace(ADDRESS, server.base_url))
    for block in runnable(document):
        parts.append(f"echo '### {block.document}:{block.line}' >&2")
        parts.append(block.text.replace(ADDRESS, server.base_url))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("WORKMEM_")}
    environment["HOME"] = str(user_home)
    # `workmem` is on the PATH, as after `pip install`.
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    result = subprocess.run(
        ["bash", "-c", "\n".join(parts)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=user_home,
    )
    where = result.stderr.strip().splitlines()[-3:]
    assert result.returncode == 0, f"{where}\n{result.stdout[-3000:]}"
    for expected in EXPECTED[document]:
        assert expected in result.stdout, (expected, result.stdout[-3000:])
    assert "null\n" not in result.stdout.replace(": null", ""), result.stdout
