"""Export and import of the 1 000-session workspace of the OpenViking import benchmark.

Imports the scaled OpenViking workspace into a tenant, exports the tenant to a bundle, imports
the bundle into a second tenant and again (the idempotent re-run), and prints JSON: the times,
the bundle's size and the rows per table. The manifest of the bundle is printed with
``--manifest``.

    python -m bench.bundle [SESSIONS] [--manifest]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from app.bundles.service import Scope, export_bundle, import_bundle
from app.config import Settings
from app.db import Database
from app.importer.openviking.run import ImportOptions, import_workspace
from app.sessions.service import Limits
from app.tenancy import service as tenancy
from app.wiring import build_embedder
from bench.import_openviking import USERS, Quiet
from tests.support.openviking import scaled_workspace
from tests.support.postgres import PostgresForTests


class Silent:
    def table(self, name: str, total: int) -> None:
        pass

    def advance(self, rows: int) -> None:
        pass


async def main(sessions: int, show_manifest: bool) -> None:
    postgres = PostgresForTests.start()
    try:
        with tempfile.TemporaryDirectory(prefix="wmbundle") as scratch:
            workspace = scaled_workspace(Path(scratch) / "ws", sessions, users=USERS)
            urls = postgres.create_app_database("wmbenchbundle")
            database = Database.from_url(urls.app, pool_size=2)
            async with database.unscoped() as db:
                source = await tenancy.create_tenant(db, "bench source")
                target = await tenancy.create_tenant(db, "bench target")
            started = time.perf_counter()
            await import_workspace(
                database, ImportOptions(workspace, source.tenant_id), Limits(), Quiet()
            )
            openviking_s = time.perf_counter() - started
            bundle = Path(scratch) / "tenant.tar.zst"
            started = time.perf_counter()
            manifest = await export_bundle(database, Scope(source.tenant_id), bundle, Silent())
            export_s = time.perf_counter() - started
            embedder = build_embedder(Settings(database_url=urls.app))
            started = time.perf_counter()
            report = await import_bundle(database, bundle, target.tenant_id, embedder, Silent())
            import_s = time.perf_counter() - started
            started = time.perf_counter()
            again = await import_bundle(database, bundle, target.tenant_id, embedder, Silent())
            rerun_s = time.perf_counter() - started
            size = bundle.stat().st_size
            await database.dispose()
    finally:
        postgres.stop()
    assert report.agent_sessions_new == sessions
    assert not again.changed
    rows = {entry["table"]: entry["rows"] for entry in manifest["files"]}
    assert {name: report.inserted[name] for name in rows} == rows
    raw = sum(entry["bytes"] for entry in manifest["files"])
    result: dict[str, Any] = {
        "sessions": sessions,
        "rows": rows,
        "rows_total": sum(rows.values()),
        "bundle_bytes": size,
        "json_lines_bytes": raw,
        "openviking_import_s": round(openviking_s, 2),
        "export_s": round(export_s, 2),
        "import_s": round(import_s, 2),
        "reimport_s": round(rerun_s, 2),
        "export_rows_per_s": round(sum(rows.values()) / export_s, 1),
        "import_rows_per_s": round(sum(rows.values()) / import_s, 1),
    }
    if show_manifest:
        result["manifest"] = manifest
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
    asyncio.run(main(int(arguments[0]) if arguments else 1000, "--manifest" in sys.argv))
