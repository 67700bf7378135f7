"""Export a scope of a tenant to a bundle, and import a bundle into a tenant.

Export reads in one tenant transaction (one consistent snapshot). Import reads and checks the
whole bundle first, then stores it in one tenant transaction: a bundle is imported entirely or
not at all, and importing it again inserts nothing.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from app import migrations
from app.bundles import repository
from app.bundles.files import Bundle, BundleRefused, TableFile, read_bundle, write_bundle
from app.bundles.tables import EXCLUDED, FORMAT, TABLES, Scoped, Table
from app.db import Database
from app.errors import NotFound
from app.memories.embedding import Embedder
from app.tenancy import service as tenancy
from app.usage.records import calls_for

EMBED_BATCH = 256
INSERT_BATCH = 1000


class Listener(Protocol):
    def table(self, name: str, total: int) -> None: ...

    def advance(self, rows: int) -> None: ...


@dataclass(frozen=True, slots=True)
class Scope:
    tenant_id: uuid.UUID
    user_id: str | None = None
    session_id: uuid.UUID | None = None


def service_version() -> str:
    try:
        return metadata.version("workmem")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed
        return "unknown"


async def export_bundle(
    database: Database, scope: Scope, out: Path, listener: Listener
) -> dict[str, Any]:
    """Write the bundle of ``scope`` to ``out``; answers its manifest."""
    async with database.unscoped() as db:
        if not await tenancy.tenant_exists(db, scope.tenant_id):
            raise NotFound(f"tenant {scope.tenant_id} does not exist")
    with tempfile.TemporaryDirectory(prefix="workmem-bundle-") as scratch:
        files: list[TableFile] = []
        entries: list[dict[str, Any]] = []
        async with database.tenant(scope.tenant_id) as db:
            chosen, ancestors, users = await repository.scope_sessions(
                db, user_id=scope.user_id, session_id=scope.session_id
            )
            if scope.session_id is not None and not chosen:
                raise NotFound(f"agent session {scope.session_id} does not exist in the tenant")
            if scope.user_id is not None and not chosen:
                raise NotFound(f"user {scope.user_id!r} has no agent session in the tenant")
            whole = scope.user_id is None and scope.session_id is None
            for table in TABLES:
                carried = await repository.columns(db, table.name)
                listener.table(table.name, 0)
                file = TableFile(table.name, Path(scratch) / f"{table.name}.jsonl")
                with file.path.open("wb") as stream:
                    async for line in repository.export_rows(
                        db, table, carried, whole_tenant=whole,
                        sessions=[*chosen, *ancestors], users=users,
                    ):  # fmt: skip
                        file.add(line, stream)
                        if file.rows % 500 == 0:
                            listener.advance(500)
                listener.advance(file.rows % 500)
                files.append(file)
                entries.append(file.entry(carried))
        manifest = {
            "format": FORMAT,
            "created_at": datetime.now(UTC).isoformat(),
            "source": {
                "service": "workmem",
                "version": service_version(),
                "schema_head": migrations.head_revision(),
            },
            "scope": {
                "tenant_id": str(scope.tenant_id),
                "user_id": scope.user_id,
                "agent_session_id": None if scope.session_id is None else str(scope.session_id),
                "agent_sessions": len(chosen),
                "ancestors_added": sorted(str(ancestor) for ancestor in ancestors),
            },
            "embeddings": "left out: the target's embedder computes them on import",
            "files": entries,
            "left_out": EXCLUDED,
        }
        write_bundle(out, manifest, files)
    return manifest


@dataclass(slots=True)
class ImportReport:
    bundle: Path
    tenant_id: uuid.UUID
    agent_sessions_new: int = 0
    agent_sessions_present: int = 0
    inserted: dict[str, int] = field(default_factory=dict)
    in_bundle: dict[str, int] = field(default_factory=dict)
    embedding_model: str | None = None

    @property
    def changed(self) -> bool:
        return any(self.inserted.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "bundle": str(self.bundle),
            "tenant_id": str(self.tenant_id),
            "changed": self.changed,
            "agent_sessions": {
                "imported": self.agent_sessions_new,
                "already_there": self.agent_sessions_present,
            },
            "rows": {
                name: {"in_bundle": self.in_bundle[name], "inserted": self.inserted[name]}
                for name in self.in_bundle
            },
            "embedding_model": self.embedding_model,
        }


async def import_bundle(
    database: Database,
    path: Path,
    tenant_id: uuid.UUID,
    embedder: Embedder,
    listener: Listener,
) -> ImportReport:
    """Check the bundle, then store what the tenant does not hold yet, in one transaction.

    An agent session already in the tenant (by id) is left as it is, with everything of it."""
    bundle = read_bundle(path)
    async with database.unscoped() as db:
        if not await tenancy.tenant_exists(db, tenant_id):
            raise NotFound(f"tenant {tenant_id} does not exist")
    report = ImportReport(path, tenant_id, embedding_model=embedder.identity)
    async with database.tenant(tenant_id) as db:
        targets = {table.name: await repository.columns(db, table.name) for table in TABLES}
        _check_columns(path, bundle, targets)
        sessions = [uuid.UUID(row["agent_session_id"]) for row in bundle.rows["agent_sessions"]]
        present = await repository.existing_sessions(db, sessions)
        report.agent_sessions_present = len(present)
        report.agent_sessions_new = len(sessions) - len(present)
        new = {str(session) for session in sessions if session not in present}
        for table in TABLES:
            rows = _wanted(table, bundle.rows.get(table.name, []), new)
            if table.name == "agent_sessions":
                rows = _parents_first(rows)
            carried = [
                name for name in bundle_columns(bundle, table) if name in targets[table.name]
            ]
            report.in_bundle[table.name] = len(bundle.rows.get(table.name, []))
            listener.table(table.name, len(rows))
            inserted = 0
            for start in range(0, len(rows), INSERT_BATCH):
                chunk = rows[start : start + INSERT_BATCH]
                columns = carried
                if table.name == "memories":
                    chunk = await _embedded(chunk, embedder, tenant_id)
                    columns = [*carried, "embedding", "embedding_model"]
                inserted += await repository.insert_rows(db, table, columns, tenant_id, chunk)
                listener.advance(len(chunk))
            report.inserted[table.name] = inserted
        await repository.queue_unfinished(db, tenant_id, [uuid.UUID(each) for each in new])
    return report


def bundle_columns(bundle: Bundle, table: Table) -> list[str]:
    for entry in bundle.manifest["files"]:
        if entry["table"] == table.name:
            return [str(name) for name in entry.get("columns", [])]
    return []


def _check_columns(path: Path, bundle: Bundle, targets: dict[str, list[str]]) -> None:
    """A column the target does not have would be lost: refuse the bundle instead."""
    for entry in bundle.manifest["files"]:
        unknown = [name for name in entry.get("columns", []) if name not in targets[entry["table"]]]
        if unknown:
            raise BundleRefused(
                f"{path}: {entry['path']} has columns this database does not "
                f"({', '.join(map(str, unknown))}); upgrade this service first"
            )


def _wanted(table: Table, rows: list[dict[str, Any]], new: set[str]) -> list[dict[str, Any]]:
    if table.scoped is Scoped.SESSION:
        return [row for row in rows if row.get("agent_session_id") in new]
    return rows


def _parents_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Agent sessions ordered so that a fork comes after the agent session it was forked from."""
    by_id = {row["agent_session_id"]: row for row in rows}

    def depth(row: dict[str, Any]) -> int:
        count, parent = 0, row.get("parent_session_id")
        while parent in by_id and count <= len(by_id):
            count, parent = count + 1, by_id[parent].get("parent_session_id")
        return count

    return sorted(rows, key=depth)


async def _embedded(
    rows: list[dict[str, Any]], embedder: Embedder, tenant_id: uuid.UUID
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for start in range(0, len(rows), EMBED_BATCH):
        batch = rows[start : start + EMBED_BATCH]
        with calls_for(tenant_id, purpose="embedding"):
            vectors = await embedder.embed([str(row["content"]) for row in batch])
        out.extend(
            {**row, "embedding": _vector(vector), "embedding_model": embedder.identity}
            for row, vector in zip(batch, vectors, strict=True)
        )
    return out


def _vector(values: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(value)) for value in values) + "]"
