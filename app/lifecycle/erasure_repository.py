"""SQL of erasing a user: everything of one agent session, then what is the user's alone.

Every statement names the repository's tenant (row-level security backs it up). Each delete
returns how many rows it removed, under the table's name, for the receipt. Tables this module
does not know that hold an ``agent_session_id`` or a ``user_id`` beside their ``tenant_id``
are found in the catalogue and emptied of the agent session's or user's rows the same way, so
a table added later is erased without a change here. Flushes, never commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.tenancy.principal import Scope

# Children before parents: each table's rows of the agent session, before the agent session.
SESSION_TABLES: Final = (
    "context_records",
    "message_redactions",
    "message_retractions",
    "pin_events",
    "pins",
    "wm_section_versions",
    "archives",
    "messages",
)
KNOWN_TABLES: Final = frozenset(
    {
        *SESSION_TABLES,
        "agent_sessions",
        "memories",
        "memory_events",
        "webhook_deliveries",
        "webhook_attempts",
        "idempotency_keys",
        "api_keys",
        "user_erasures",
    }
)

UNLINKED_TABLES: Final = frozenset({"model_calls", "archive_actions"})
"""Tables whose rows go with the agent session by their foreign key, not by a delete of their
own: ``model_calls`` keeps its rows with the ``agent_session_id`` set to NULL (what the models
cost stays on the tenant's bill, with no id of the user); ``archive_actions`` (an audit record
the service may not delete) loses them with the agent session."""

_OTHER_TABLES = text(
    """
    SELECT c.table_name, bool_or(c.column_name = 'agent_session_id') AS by_session,
           bool_or(c.column_name = 'user_id') AS by_user
      FROM information_schema.columns c
      JOIN information_schema.tables t USING (table_schema, table_name)
     WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
       AND c.column_name IN ('tenant_id', 'agent_session_id', 'user_id')
     GROUP BY c.table_name
    HAVING bool_or(c.column_name = 'tenant_id')
       AND bool_or(c.column_name IN ('agent_session_id', 'user_id'))
    """
)
_REFERENCES = text(
    """
    SELECT DISTINCT child.relname AS child, parent.relname AS parent
      FROM pg_constraint k
      JOIN pg_class child ON child.oid = k.conrelid
      JOIN pg_class parent ON parent.oid = k.confrelid
      JOIN pg_namespace n ON n.oid = child.relnamespace
     WHERE k.contype = 'f' AND n.nspname = 'public' AND child.oid <> parent.oid
    """
)


def _count(result: object) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


def ordered_for_deletion(tables: Sequence[str], references: Sequence[tuple[str, str]]) -> list[str]:
    """Tables that refer to others among them first (so no foreign key stops a delete)."""
    remaining = set(tables)
    ordered: list[str] = []
    while remaining:
        leaves = sorted(
            table
            for table in remaining
            if not any(parent == table and child in remaining for child, parent in references)
        )
        batch = leaves or sorted(remaining)
        ordered.extend(batch)
        remaining -= set(batch)
    return ordered


class ErasureRepository:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.tenant_id = scope.tenant_id

    def _bind(self, **values: Any) -> dict[str, Any]:
        return {"tenant_id": self.tenant_id, **values}

    # --- what there is to erase ------------------------------------------------------------

    async def sessions_of(self, user_id: str, *, limit: int) -> list[uuid.UUID]:
        # Newest first: a fork is newer than the agent sessions it shares history with (which
        # cannot be deleted before it), and it is always its user's too.
        rows = await self.db.scalars(
            text(
                "SELECT agent_session_id FROM agent_sessions "
                "WHERE tenant_id = :tenant_id AND user_id = :user_id "
                "ORDER BY created_at DESC, agent_session_id DESC LIMIT :limit"
            ),
            self._bind(user_id=user_id, limit=limit),
        )
        return list(rows.all())

    async def holds_anything_of(self, user_id: str, tables: Sequence[str]) -> bool:
        """Whether any row names the user: an agent session, a memory or its event, a key
        bound to them, or a row of ``tables`` (others with a ``user_id``)."""
        for table in ("agent_sessions", "memories", "memory_events", "api_keys", *tables):
            found = await self.db.scalar(
                text(
                    f'SELECT EXISTS (SELECT 1 FROM "{table}" '  # noqa: S608
                    "WHERE tenant_id = :tenant_id AND user_id = :uid)"
                ),
                self._bind(uid=user_id),
            )
            if found:
                return True
        return False

    async def lock_session(self, agent_session_id: uuid.UUID, user_id: str) -> bool:
        """The agent session, still the user's, locked against appends and commits."""
        found = await self.db.scalar(
            text(
                "SELECT agent_session_id FROM agent_sessions "
                "WHERE tenant_id = :tenant_id AND agent_session_id = :sid AND user_id = :user_id "
                "FOR UPDATE"
            ),
            self._bind(sid=agent_session_id, user_id=user_id),
        )
        return found is not None

    async def other_tables(self) -> tuple[list[str], list[str]]:
        """Tables this module does not know: those with an ``agent_session_id``, those with a
        ``user_id`` (each in an order no foreign key stops)."""
        rows = (await self.db.execute(_OTHER_TABLES)).all()
        references = [(row.child, row.parent) for row in (await self.db.execute(_REFERENCES))]
        by_session = [row.table_name for row in rows if row.by_session]
        by_user = [row.table_name for row in rows if row.by_user and not row.by_session]
        return (
            ordered_for_deletion(
                [t for t in by_session if t not in KNOWN_TABLES | UNLINKED_TABLES], references
            ),
            ordered_for_deletion(
                [t for t in by_user if t not in KNOWN_TABLES | UNLINKED_TABLES], references
            ),
        )

    # --- one agent session ---------------------------------------------------------------------

    async def session_memories(self, agent_session_id: uuid.UUID) -> list[uuid.UUID]:
        """Memories the agent session's archives added or restated."""
        rows = await self.db.scalars(
            text(
                "SELECT memory_id FROM memories WHERE tenant_id = :tenant_id AND ("
                "  agent_session_id = :sid OR memory_id IN ("
                "    SELECT memory_id FROM memory_events"
                "     WHERE tenant_id = :tenant_id AND agent_session_id = :sid))"
            ),
            self._bind(sid=agent_session_id),
        )
        return list(rows.all())

    async def user_memories(self, user_id: str) -> list[uuid.UUID]:
        rows = await self.db.scalars(
            text("SELECT memory_id FROM memories WHERE tenant_id = :tenant_id AND user_id = :uid"),
            self._bind(uid=user_id),
        )
        return list(rows.all())

    async def delete_memory_events(
        self,
        memory_ids: Sequence[uuid.UUID],
        *,
        agent_session_id: uuid.UUID | None = None,
        user_id: str | None = None,
    ) -> int:
        result = await self.db.execute(
            text(
                "DELETE FROM memory_events WHERE tenant_id = :tenant_id AND ("
                "  memory_id = ANY(:ids) OR related_memory_id = ANY(:ids)"
                "  OR agent_session_id = :sid OR user_id = :uid)"
            ),
            self._bind(ids=list(memory_ids), sid=agent_session_id, uid=user_id),
        )
        return _count(result)

    async def delete_memories(self, memory_ids: Sequence[uuid.UUID]) -> int:
        result = await self.db.execute(
            text("DELETE FROM memories WHERE tenant_id = :tenant_id AND memory_id = ANY(:ids)"),
            self._bind(ids=list(memory_ids)),
        )
        return _count(result)

    async def may_delete(self, table: str) -> bool:
        """Whether the service's login may delete from ``table`` (an append-only audit table
        loses an agent session's rows only by its foreign key's cascade)."""
        allowed = await self.db.scalar(
            text("SELECT has_table_privilege(CAST(:table AS text), 'DELETE')"),
            {"table": f'public."{table}"'},
        )
        return bool(allowed)

    async def count_session_rows(self, table: str, agent_session_id: uuid.UUID) -> int:
        # Table names come from the catalogue, never from input.
        found = await self.db.scalar(
            text(
                f'SELECT count(*) FROM "{table}" '  # noqa: S608
                "WHERE tenant_id = :tenant_id AND agent_session_id = :sid"
            ),
            self._bind(sid=agent_session_id),
        )
        return int(found or 0)

    async def delete_session_rows(self, table: str, agent_session_id: uuid.UUID) -> int:
        # Table names come from this module or the catalogue, never from input.
        result = await self.db.execute(
            text(
                f'DELETE FROM "{table}" '  # noqa: S608
                "WHERE tenant_id = :tenant_id AND agent_session_id = :sid"
            ),
            self._bind(sid=agent_session_id),
        )
        return _count(result)

    async def delete_session(self, agent_session_id: uuid.UUID) -> int:
        return await self.delete_session_rows("agent_sessions", agent_session_id)

    # --- what quotes the user or their objects --------------------------------------------------

    async def delete_deliveries_quoting(self, needles: Sequence[str]) -> tuple[int, int]:
        """Webhook deliveries whose payload names any of ``needles`` (ids, or the user id as a
        JSON string), with their attempts and their rows of the claim's queue: (deliveries,
        attempts) removed."""
        if not needles:
            return 0, 0
        quoting = (
            "SELECT delivery_id FROM webhook_deliveries d WHERE d.tenant_id = :tenant_id "
            "AND EXISTS (SELECT 1 FROM unnest(CAST(:needles AS text[])) n "
            "            WHERE strpos(d.payload::text, n) > 0)"
        )
        attempts = await self.db.execute(
            text(
                "DELETE FROM webhook_attempts WHERE tenant_id = :tenant_id "  # noqa: S608
                f"AND delivery_id IN ({quoting})"
            ),
            self._bind(needles=list(needles)),
        )
        # With their rows of the claim's queue, in the same statement: the delivery first, then
        # its queue row, in the order that settling an attempt takes them.
        deliveries = await self.db.scalar(
            text(
                "WITH gone AS ("  # noqa: S608
                " DELETE FROM webhook_deliveries WHERE tenant_id = :tenant_id "
                f" AND delivery_id IN ({quoting}) RETURNING delivery_id"
                "), unqueued AS ("
                " DELETE FROM claimable_webhook_deliveries q WHERE q.tenant_id = :tenant_id"
                " AND q.delivery_id IN (SELECT delivery_id FROM gone)"
                ") SELECT count(*) FROM gone"
            ),
            self._bind(needles=list(needles)),
        )
        return int(deliveries or 0), _count(attempts)

    async def delete_answers_of(self, agent_session_id: uuid.UUID) -> int:
        """Stored idempotency answers of writes to the agent session."""
        result = await self.db.execute(
            text(
                "DELETE FROM idempotency_keys "
                "WHERE tenant_id = :tenant_id AND agent_session_id = :sid"
            ),
            self._bind(sid=agent_session_id),
        )
        return _count(result)

    async def delete_answers_quoting(self, needles: Sequence[bytes]) -> int:
        """Stored idempotency answers that repeat any of ``needles``: a retry with their key
        is then a new request (whose agent session, or user, is gone)."""
        if not needles:
            return 0
        result = await self.db.execute(
            text(
                "DELETE FROM idempotency_keys WHERE tenant_id = :tenant_id "
                "AND response_body IS NOT NULL "
                "AND EXISTS (SELECT 1 FROM unnest(CAST(:needles AS bytea[])) n "
                "            WHERE position(n IN response_body) > 0)"
            ),
            self._bind(needles=list(needles)),
        )
        return _count(result)

    # --- what is the user's alone ---------------------------------------------------------------

    async def delete_user_rows(self, table: str, user_id: str) -> int:
        # Table names come from this module or the catalogue, never from input.
        result = await self.db.execute(
            text(
                f'DELETE FROM "{table}" '  # noqa: S608
                "WHERE tenant_id = :tenant_id AND user_id = :uid"
            ),
            self._bind(uid=user_id),
        )
        return _count(result)
