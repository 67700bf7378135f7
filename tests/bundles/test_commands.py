"""``workmem export`` and ``workmem import workmem`` as an operator runs them (a subprocess on
the real database): the round trip, the second import that changes nothing, and every kind of
damaged bundle refused with one line naming the file, nothing stored."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import zstandard
from sqlalchemy import text

from app.db import Database
from tests.conftest import make_tenant
from tests.support.servers import workmem_command
from tests.support.spread import messages_of, ok

pytestmark = pytest.mark.e2e


def workmem(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*workmem_command(), *args],
        env={**os.environ, "DATABASE_URL": url, "WORKMEM_LOG_JSON": "true"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def stored(admin_database: Database, tenant_id: object) -> int:
    async with admin_database.unscoped() as db:
        found = await db.scalar(
            text(
                "SELECT (SELECT count(*) FROM agent_sessions WHERE tenant_id = :t)"
                " + (SELECT count(*) FROM messages WHERE tenant_id = :t)"
                " + (SELECT count(*) FROM user_memory_policies WHERE tenant_id = :t)"
            ),
            {"t": tenant_id},
        )
    return int(found or 0)


def members(bundle: Path) -> dict[str, bytes]:
    plain = zstandard.ZstdDecompressor().decompressobj().decompress(bundle.read_bytes())
    with tarfile.open(fileobj=io.BytesIO(plain), mode="r:") as tar:
        return {
            info.name: tar.extractfile(info).read()  # type: ignore[union-attr]
            for info in tar
            if info.isfile()
        }


def pack(out: Path, files: dict[str, bytes]) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out.write_bytes(zstandard.ZstdCompressor().compress(buffer.getvalue()))
    return out


def written(out: Path, data: bytes) -> Path:
    out.write_bytes(data)
    return out


def changed_table(files: dict[str, bytes]) -> dict[str, bytes]:
    data = files["tables/messages.jsonl"]
    return {**files, "tables/messages.jsonl": data.replace(b"invoice", b"receipt", 1)}


def other_format(files: dict[str, bytes]) -> dict[str, bytes]:
    manifest = json.loads(files["manifest.json"])
    return {
        **files,
        "manifest.json": json.dumps({**manifest, "format": "workmem.bundle/9"}).encode(),
    }


def no_manifest(files: dict[str, bytes]) -> dict[str, bytes]:
    return {name: data for name, data in files.items() if name != "manifest.json"}


def missing_file(files: dict[str, bytes]) -> dict[str, bytes]:
    return {name: data for name, data in files.items() if name != "tables/pins.jsonl"}


def fewer_rows(files: dict[str, bytes]) -> dict[str, bytes]:
    manifest = json.loads(files["manifest.json"])
    data = b"".join(files["tables/messages.jsonl"].splitlines(keepends=True)[:-1])
    for entry in manifest["files"]:
        if entry["table"] == "messages":
            entry["sha256"] = hashlib.sha256(data).hexdigest()
    return {
        **files,
        "manifest.json": json.dumps(manifest).encode(),
        "tables/messages.jsonl": data,
    }


DAMAGE: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "a table changed": (
        lambda good, out: pack(out, changed_table(members(good))),
        "tables/messages.jsonl does not match its sha256 in manifest.json",
    ),
    "a row cut off, digest redone": (
        lambda good, out: pack(out, fewer_rows(members(good))),
        "tables/messages.jsonl holds",
    ),
    "truncated": (
        lambda good, out: written(out, good.read_bytes()[:-200]),
        "the bundle is truncated",
    ),
    "an unknown format": (
        lambda good, out: pack(out, other_format(members(good))),
        "bundle format 'workmem.bundle/9' is not one this version reads",
    ),
    "no manifest": (
        lambda good, out: pack(out, no_manifest(members(good))),
        "no manifest.json in it",
    ),
    "a listed file missing": (
        lambda good, out: pack(out, missing_file(members(good))),
        "tables/pins.jsonl is listed in manifest.json but not in the bundle",
    ),
    "not zstd": (
        lambda good, out: written(out, b"just some text\n"),
        "not a zstd-compressed workmem bundle",
    ),
}


@pytest.fixture
async def exported(
    client: httpx.AsyncClient, database: Database, database_url: str, tmp_path: Path
) -> tuple[object, Path]:
    source = await make_tenant(database, "cli source")
    created = await ok(
        await client.post("/v1/sessions", json={"user_id": "ann"}, headers=source.write), 201
    )
    await ok(
        await client.post(
            f"/v1/sessions/{created['id']}/messages:batch",
            json={"messages": messages_of("zqcommand")},
            headers=source.write,
        ),
        201,
    )
    await ok(
        await client.post(
            f"/v1/sessions/{created['id']}/pins", json={"text": "a pin"}, headers=source.write
        ),
        201,
    )
    await ok(
        await client.put(
            "/v1/users/ann/memory-policy", json={}, headers=source.headers(source.admin)
        )
    )
    bundle = tmp_path / "out.tar.zst"
    result = workmem("export", "--tenant", str(source.tenant_id), str(bundle), url=database_url)
    assert result.returncode == 0, result.stderr
    manifest = json.loads(result.stdout)
    assert manifest["format"] == "workmem.bundle/1"
    counts = {entry["table"]: entry["rows"] for entry in manifest["files"]}
    assert counts["agent_sessions"] == 1
    assert counts["messages"] == 6
    assert "exporting messages: 6 rows" in result.stderr
    return source.tenant_id, bundle


async def test_export_then_import_twice(
    exported: tuple[object, Path],
    database: Database,
    admin_database: Database,
    database_url: str,
) -> None:
    source_id, bundle = exported
    target = await make_tenant(database, "cli target")
    first = workmem(
        "import", "workmem", str(bundle), "--tenant", str(target.tenant_id), url=database_url
    )
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["changed"] is True
    assert summary["agent_sessions"] == {"imported": 1, "already_there": 0}
    assert summary["rows"]["messages"] == {"in_bundle": 6, "inserted": 6}
    assert "importing messages: 6 rows" in first.stderr
    count = await stored(admin_database, target.tenant_id)
    assert count == await stored(admin_database, source_id) == 8

    second = workmem(
        "import", "workmem", str(bundle), "--tenant", str(target.tenant_id), url=database_url
    )
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["changed"] is False
    assert "nothing changed: everything in" in second.stderr
    assert await stored(admin_database, target.tenant_id) == count


@pytest.mark.parametrize("damage", list(DAMAGE))
async def test_a_damaged_bundle_is_refused_with_one_line_and_nothing_stored(
    exported: tuple[object, Path],
    database: Database,
    admin_database: Database,
    database_url: str,
    tmp_path: Path,
    damage: str,
) -> None:
    _, good = exported
    make, says = DAMAGE[damage]
    bad = make(good, tmp_path / "bad.tar.zst")
    target = await make_tenant(database, "damaged target")
    result = workmem(
        "import", "workmem", str(bad), "--tenant", str(target.tenant_id), url=database_url
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"workmem: {bad}"), lines
    assert says in lines[0]
    assert await stored(admin_database, target.tenant_id) == 0


async def test_scope_options_and_a_missing_tenant(database_url: str, tmp_path: Path) -> None:
    both = workmem(
        "export", "--tenant", "00000000-0000-0000-0000-000000000001", "--user", "a",
        "--session", "00000000-0000-0000-0000-000000000002", str(tmp_path / "x.tar.zst"),
        url=database_url,
    )  # fmt: skip
    assert both.returncode == 1
    assert "give one of them" in both.stderr
    missing = workmem(
        "export", "--tenant", "00000000-0000-0000-0000-000000000001", str(tmp_path / "x.tar.zst"),
        url=database_url,
    )  # fmt: skip
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        "workmem: tenant 00000000-0000-0000-0000-000000000001 does not exist"
    )
    assert not (tmp_path / "x.tar.zst").exists()
