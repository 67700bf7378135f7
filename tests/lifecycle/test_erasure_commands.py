"""``workmem users erase`` and ``workmem receipts``: the real command, as an operator runs it;
verification offline (no database reachable) with the public key, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from app.db import Database
from tests.conftest import make_tenant
from tests.support.servers import closed_port, workmem_command

pytestmark = pytest.mark.e2e


def workmem(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*workmem_command(), *args],
        env={**os.environ, "WORKMEM_LOG_JSON": "true", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("workmem: "), lines
    return lines[0]


async def test_erase_then_verify_offline_and_a_changed_receipt_fails(
    client: httpx.AsyncClient, database: Database, database_url: str, tmp_path: Path
) -> None:
    tenant = await make_tenant(database, "command-line")
    created = await client.post(
        "/v1/sessions", json={"user_id": "carol@example.com"}, headers=tenant.write
    )
    assert created.status_code == 201, created.text
    online = {"DATABASE_URL": database_url}
    receipt_file = tmp_path / "receipt.json"

    erased = workmem(
        "users", "erase", "carol@example.com", "--tenant", str(tenant.tenant_id),
        "--out", str(receipt_file), env=online,
    )  # fmt: skip
    assert erased.returncode == 0, erased.stderr
    receipt = json.loads(erased.stdout)
    assert receipt == json.loads(receipt_file.read_text())
    assert receipt["removed"]["agent_sessions"] == 1
    assert receipt["requested_by_api_key_id"] is None
    assert "carol" not in erased.stdout

    again = workmem(
        "users", "erase", "carol@example.com", "--tenant", str(tenant.tenant_id), env=online
    )
    assert "nothing of this user is stored" in one_line(again)

    # With the key read from the database.
    checked = workmem("receipts", "verify", str(receipt_file), env=online)
    assert checked.returncode == 0, checked.stderr
    assert f"valid receipt of erasure {receipt['erasure_id']}" in checked.stdout

    # Offline: the public key in a file, no database anywhere.
    shown = workmem("receipts", "public-key", "--tenant", str(tenant.tenant_id), env=online)
    assert shown.returncode == 0, shown.stderr
    key_file = tmp_path / "key.json"
    key_file.write_text(shown.stdout)
    pem_file = tmp_path / "key.pem"
    pem_file.write_text(json.loads(shown.stdout)["pem"])
    routed = await client.get("/v1/receipts/public-key", headers=tenant.read)
    assert routed.json() == json.loads(shown.stdout)
    offline = {"DATABASE_URL": f"postgresql://nobody@127.0.0.1:{closed_port()}/none"}
    for key in (key_file, pem_file):
        checked = workmem(
            "receipts", "verify", str(receipt_file), "--public-key", str(key), env=offline
        )
        assert checked.returncode == 0, checked.stderr

    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps({**receipt, "rows_removed": receipt["rows_removed"] + 1}))
    failed = workmem(
        "receipts", "verify", str(tampered), "--public-key", str(pem_file), env=offline
    )
    assert "the signature does not verify" in one_line(failed)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read the receipt"),
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "is not a JSON object"),
        ('{"format": "something else"}', "not an erasure receipt"),
    ],
)
def test_verify_refuses_what_is_not_a_receipt_in_one_line(
    tmp_path: Path, content: str | None, says: str
) -> None:
    path = tmp_path / "receipt.json"
    if content is not None:
        path.write_text(content)
    key = tmp_path / "key.txt"
    key.write_text("A" * 43 + "=")
    offline = {"DATABASE_URL": f"postgresql://nobody@127.0.0.1:{closed_port()}/none"}
    assert says in one_line(
        workmem("receipts", "verify", str(path), "--public-key", str(key), env=offline)
    )
