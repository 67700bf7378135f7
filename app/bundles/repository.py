"""The SQL of export and import, generic over the tables of ``tables.TABLES``: rows leave as
Postgres's own JSON (``to_jsonb``) and come back through ``jsonb_populate_recordset``, so every
column type (timestamps, arrays, enums, JSON) round-trips exactly. Runs in a tenant transaction:
row-level security confines both to the tenant."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import Text, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.ext.asyncio import AsyncSession

from app.bundles.tables import LEFT_OUT_COLUMNS, Scoped, Table


async def columns(db: AsyncSession, table: str) -> list[str]:
    """The columns a bundle carries for ``table``: all but ``tenant_id``, the generated ones and
    the ones left out (embeddings)."""
    rows = await db.execute(
        text(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = :table "
            "AND is_generated = 'NEVER' AND column_name <> 'tenant_id' ORDER BY ordinal_position"
        ),
        {"table": table},
    )
    left_out = LEFT_OUT_COLUMNS.get(table, ())
    return [name for (name,) in rows if name not in left_out]


async def scope_sessions(
    db: AsyncSession, *, user_id: str | None, session_id: uuid.UUID | None
) -> tuple[list[uuid.UUID], list[uuid.UUID], list[str]]:
    """The agent sessions in scope, the ancestors added for their forks (each fork's parent, and
    every agent session whose rows its shared prefix reads), and
    the users of the agent sessions in scope (not of the ancestors)."""
    if session_id is not None:
        chosen = await db.execute(
            text(
                "SELECT agent_session_id, user_id FROM agent_sessions WHERE agent_session_id = :id"
            ),
            {"id": session_id},
        )
    elif user_id is not None:
        chosen = await db.execute(
            text("SELECT agent_session_id, user_id FROM agent_sessions WHERE user_id = :user"),
            {"user": user_id},
        )
    else:
        chosen = await db.execute(text("SELECT agent_session_id, user_id FROM agent_sessions"))
    pairs = chosen.all()
    ids = [row[0] for row in pairs]
    ancestors = await db.execute(
        text(
            "WITH RECURSIVE up(id) AS ("
            " SELECT parent_session_id FROM agent_sessions"
            " WHERE agent_session_id = ANY(:ids) AND parent_session_id IS NOT NULL"
            " UNION SELECT s.parent_session_id FROM agent_sessions s JOIN up"
            " ON s.agent_session_id = up.id WHERE s.parent_session_id IS NOT NULL"
            ") SELECT id FROM up WHERE NOT id = ANY(:ids)"
            " UNION SELECT ancestor_session_id FROM agent_session_lineage"
            " WHERE agent_session_id = ANY(:ids) AND NOT ancestor_session_id = ANY(:ids)"
        ).bindparams(bindparam("ids", type_=ARRAY(UUID(as_uuid=True)))),
        {"ids": ids},
    )
    users = sorted({row[1] for row in pairs if row[1] is not None})
    return ids, [row[0] for row in ancestors], users


def _where(table: Table, whole_tenant: bool) -> str:
    if whole_tenant:
        return "TRUE"
    if table.scoped is Scoped.SESSION:
        return "agent_session_id = ANY(:sessions)"
    if table.scoped is Scoped.MEMORY:
        return (
            "agent_session_id = ANY(:sessions) OR memory_id IN "
            "(SELECT memory_id FROM memories WHERE agent_session_id = ANY(:sessions))"
        )
    return "user_id = ANY(:users)"


async def export_rows(
    db: AsyncSession,
    table: Table,
    carried: Sequence[str],
    *,
    whole_tenant: bool,
    sessions: list[uuid.UUID],
    users: list[str],
) -> AsyncIterator[str]:
    """Each row of ``table`` in scope as one line of JSON (Postgres's text, not re-encoded)."""
    keep = ", ".join(f"'{name}', t.{name}" for name in carried)
    where = _where(table, whole_tenant)
    statement = text(
        f"SELECT jsonb_build_object({keep})::text FROM {table.name} t "  # noqa: S608
        f"WHERE {where} ORDER BY {', '.join(table.order_by)}"
    )
    values: dict[str, Any] = {}
    if ":sessions" in where:
        statement = statement.bindparams(bindparam("sessions", type_=ARRAY(UUID(as_uuid=True))))
        values["sessions"] = sessions
    if ":users" in where:
        statement = statement.bindparams(bindparam("users", type_=ARRAY(Text())))
        values["users"] = users
    result = await db.stream(statement, values)
    async for (line,) in result:
        yield line


async def existing_sessions(db: AsyncSession, ids: list[uuid.UUID]) -> set[uuid.UUID]:
    rows = await db.execute(
        text(
            "SELECT agent_session_id FROM agent_sessions WHERE agent_session_id = ANY(:ids)"
        ).bindparams(bindparam("ids", type_=ARRAY(UUID(as_uuid=True)))),
        {"ids": ids},
    )
    return {row[0] for row in rows}


async def insert_rows(
    db: AsyncSession,
    table: Table,
    carried: Sequence[str],
    tenant_id: uuid.UUID,
    rows: list[dict[str, Any]],
) -> int:
    """Insert ``rows``; the ones already there (same key, or for numbered history the same
    values) are left alone. Answers how many were inserted."""
    if not rows:
        return 0
    names = [name for name in carried if name != table.identity]
    listed = ", ".join(names)
    guard = ""
    if table.identity is not None:
        same = " AND ".join(f"e.{name} IS NOT DISTINCT FROM r.{name}" for name in names)
        guard = (
            f"WHERE NOT EXISTS (SELECT 1 FROM {table.name} e "  # noqa: S608
            f"WHERE e.tenant_id = CAST(:tenant AS uuid) AND {same}) ORDER BY r.{table.identity}"
        )
    statement = text(
        f"INSERT INTO {table.name} (tenant_id, {listed}) "  # noqa: S608
        f"SELECT CAST(:tenant AS uuid), {', '.join(f'r.{n}' for n in names)} "
        f"FROM jsonb_populate_recordset(NULL::{table.name}, CAST(:rows AS jsonb)) r {guard} "
        "ON CONFLICT DO NOTHING"
    )
    result = await db.execute(statement, {"tenant": str(tenant_id), "rows": json.dumps(rows)})
    return int(result.rowcount)  # type: ignore[attr-defined]


async def queue_unfinished(
    db: AsyncSession, tenant_id: uuid.UUID, agent_session_ids: Sequence[uuid.UUID]
) -> int:
    """The claim's queue rows of the imported agent sessions that hold a pending or running
    archive (``claimable_archives``, which a bundle does not carry): their archives then run in
    the target as they would have in the source. Answers how many were queued."""
    if not agent_session_ids:
        return 0
    result = await db.execute(
        text(
            "INSERT INTO claimable_archives (tenant_id, agent_session_id, available_at) "
            "SELECT tenant_id, agent_session_id, now() FROM archives "
            "WHERE tenant_id = :tenant_id AND agent_session_id = ANY(:ids) "
            "AND status IN ('pending', 'running') GROUP BY tenant_id, agent_session_id "
            "ON CONFLICT DO NOTHING"
        ).bindparams(bindparam("ids", type_=ARRAY(UUID(as_uuid=True)))),
        {"tenant_id": tenant_id, "ids": list(agent_session_ids)},
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
