"""SQL of the phase-2 write path and of re-embedding, under the claimed archive's tenant.

Owns the lookups a batch of candidates is decided against (each one's nearest current memories
of the user's category, the current memories sharing its slot, the candidates' distances to each
other: one statement), the rows the batch's ADD, UPDATE and SUPERSEDE changes leave (a few
statements), the per-user advisory lock that serialises them, and the batches of re-embedding.
Names the user explicitly (the job has no credential). Flushes, never commits.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.memories.batch import Found, Row, Stored
from app.models import Memory
from app.tenancy.principal import Scope
from app.wm.redaction import REDACTED

Wanted = tuple[int, str, str | None, int, str]
"""A candidate to look up: its index in the batch, category, slot (``None`` unless it can
contradict), how many nearest memories to find, and its vector as ``vector_text`` wrote it."""

_EVENT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (column, array type bound, type of the column): arrays and JSON are bound as text.
    ("memory_id", "uuid[]", "uuid"),
    ("related_memory_id", "uuid[]", "uuid"),
    ("user_id", "text[]", "text"),
    ("event", "text[]", "text"),
    ("old_content", "text[]", "text"),
    ("new_content", "text[]", "text"),
    ("agent_session_id", "uuid[]", "uuid"),
    ("archive_seq", "integer[]", "integer"),
    ("source_seqs", "text[]", "bigint[]"),
    ("actor", "text[]", "text"),
    ("details", "text[]", "jsonb"),
)
_NAMES = ", ".join(name for name, _, _ in _EVENT_COLUMNS)
_INSERT_EVENTS = text(
    # One row an element of the arrays, in their order (the events' ids follow it). Only
    # column names are formatted in: every value is bound.
    f"INSERT INTO memory_events (tenant_id, {_NAMES}) SELECT :tenant_id, "  # noqa: S608
    + ", ".join(f"CAST(e.{name} AS {kind})" for name, _, kind in _EVENT_COLUMNS)
    + " FROM unnest("
    + ", ".join(f"CAST(:{name} AS {array})" for name, array, _ in _EVENT_COLUMNS)
    + f") WITH ORDINALITY AS e({_NAMES}, n) ORDER BY e.n"
)


_VALUE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (column, array type bound, value written): what a candidate sets, inserted or restated.
    ("content", "text[]", "r.content"),
    ("slot", "text[]", "r.slot"),
    ("slot_value", "text[]", "r.slot_value"),
    ("agent_session_id", "uuid[]", "r.agent_session_id"),
    ("agent_id", "text[]", "r.agent_id"),
    ("archive_seq", "integer[]", "r.archive_seq"),
    ("source_seqs", "text[]", "CAST(r.source_seqs AS bigint[])"),
    ("embedding", "text[]", "CAST(r.embedding AS vector)"),
    ("embedding_model", "text[]", "r.embedding_model"),
)
_ROW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("memory_id", "uuid[]"),
    ("category", "text[]"),
    ("superseded_by", "uuid[]"),
    ("confidence", "float8[]"),
    ("days", "integer[]"),
    *((name, array) for name, array, _ in _VALUE_COLUMNS),
)
"""The arrays bound for a batch's rows (``days``: the lifetime of the row's category)."""
_UNNEST = (
    # Only column names and fixed expressions are formatted in: every value is bound.
    "unnest("
    + ", ".join(f"CAST(:{name} AS {array})" for name, array in _ROW_COLUMNS)
    + f") WITH ORDINALITY AS r({', '.join(name for name, _ in _ROW_COLUMNS)}, n)"
)
_EXPIRY = "now() + make_interval(0, 0, 0, r.days)"
_INSERT_MEMORIES = text(
    # One row an element of the arrays, inserted in their order.
    "INSERT INTO memories (tenant_id, user_id, memory_id, category, superseded_by, confidence, "  # noqa: S608
    f"expires_at, {', '.join(name for name, _, _ in _VALUE_COLUMNS)}) "
    "SELECT :tenant_id, :user_id, r.memory_id, r.category, r.superseded_by, r.confidence, "
    f"{_EXPIRY}, "
    + ", ".join(value for _, _, value in _VALUE_COLUMNS)
    + f" FROM {_UNNEST} ORDER BY r.n"
)
_RESTATE_MEMORIES = text(
    # A restated memory keeps the greater confidence, and its lifetime unless its category has
    # one.
    "UPDATE memories AS m SET updated_at = now(), "  # noqa: S608
    "confidence = greatest(m.confidence, r.confidence), "
    f"expires_at = coalesce({_EXPIRY}, m.expires_at), "
    + ", ".join(f"{name} = {value}" for name, _, value in _VALUE_COLUMNS)
    + f" FROM {_UNNEST} WHERE m.tenant_id = :tenant_id AND m.memory_id = r.memory_id"
)
_SUPERSEDE_MEMORIES = text(
    "UPDATE memories AS m SET superseded_by = r.superseded_by, updated_at = now() "
    "FROM unnest(CAST(:memory_id AS uuid[]), CAST(:superseded_by AS uuid[])) "
    "AS r(memory_id, superseded_by) "
    "WHERE m.tenant_id = :tenant_id AND m.memory_id = r.memory_id"
)


def vector_text(vector: Sequence[float]) -> str:
    """``vector`` as pgvector reads it, written as the driver adaptation writes it (each value
    as ``str(float(value))``): computed once a candidate, bound as text and cast in SQL."""
    return f"[{','.join([str(float(value)) for value in vector])}]"


def seqs_text(seqs: Sequence[int]) -> str:
    """``seqs`` as a Postgres array literal (``{1,2}``), for an array of arrays bound as text."""
    return "{" + ",".join(str(int(seq)) for seq in seqs) + "}"


class MemoryStore:
    def __init__(self, db: AsyncSession, scope: Scope) -> None:
        self.db = db
        self.scope = scope

    async def lock_user(self, user_id: str | None) -> None:
        """Serialise memory writes for one user of this tenant until the transaction ends, so
        two archives of the same user never both add the same fact."""
        # The key ends with the tenant, as every tenant's own lock's does (a distributed
        # cluster takes it for that tenant).
        key = f"memories:{user_id or ''}:{self.scope.tenant_id}"
        await self.db.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": key}
        )

    # --- re-embedding ------------------------------------------------------------------------

    async def count_stale(self, model: str) -> int:
        result = await self.db.execute(
            select(func.count())
            .select_from(Memory)
            .where(
                Memory.tenant_id == self.scope.tenant_id,
                Memory.embedding_model != model,
                Memory.embedding_model != REDACTED,
            )
        )
        return result.scalar_one()

    async def stale(
        self, model: str, *, after: uuid.UUID | None, limit: int
    ) -> list[tuple[uuid.UUID, str]]:
        """Memories not embedded by ``model``, by id after ``after``: ``(memory_id, content)``.
        A redacted memory has no vector and never gets one again."""
        statement = select(Memory.memory_id, Memory.content).where(
            Memory.tenant_id == self.scope.tenant_id,
            Memory.embedding_model != model,
            Memory.embedding_model != REDACTED,
        )
        if after is not None:
            statement = statement.where(Memory.memory_id > after)
        rows = await self.db.execute(statement.order_by(Memory.memory_id).limit(limit))
        return [(row.memory_id, row.content) for row in rows.all()]

    async def set_embedding(
        self, memory_id: uuid.UUID, content: str, vector: Sequence[float], model: str
    ) -> bool:
        """Store the new vector unless the memory changed since it was read."""
        result = await self.db.execute(
            update(Memory)
            .where(
                Memory.tenant_id == self.scope.tenant_id,
                Memory.memory_id == memory_id,
                Memory.content == content,
            )
            .values(embedding=list(vector), embedding_model=model)
            .returning(Memory.memory_id)
        )
        return result.first() is not None

    # --- a batch's lookup and writes ---------------------------------------------------------

    async def find(
        self,
        user_id: str | None,
        model: str,
        wanted: Sequence[Wanted],
        *,
        leaving_out: Sequence[uuid.UUID] = (),
    ) -> tuple[dict[int, Found], dict[tuple[int, int], float], datetime]:
        """In one statement, for each wanted candidate: its ``depth`` nearest current memories
        of its category made by ``model`` (as ``nearest`` orders them, ``leaving_out`` those
        ids), and the current ones sharing its slot (``same_slot``'s rows); the distance of
        every two candidates of one category; and the transaction's time."""
        params: dict[str, Any] = {"tenant_id": self.scope.tenant_id, "model": model}
        rows_sql = []
        for number, (index, category, slot, depth, vector) in enumerate(wanted):
            rows_sql.append(
                f"(CAST(:k{number} AS integer), CAST(:c{number} AS text), CAST(:s{number} AS text),"
                f" CAST(:d{number} AS integer), CAST(:e{number} AS vector))"
            )
            params |= {
                f"k{number}": index,
                f"c{number}": category,
                f"s{number}": slot,
                f"d{number}": depth,
                f"e{number}": vector,
            }
        user = "m.user_id IS NULL" if user_id is None else "m.user_id = :user_id"
        params["user_id"] = user_id
        current = (
            f"m.tenant_id = :tenant_id AND {user} AND m.category = w.category "
            "AND m.superseded_by IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())"
        )
        leave = ""
        if leaving_out:
            leave = "AND m.memory_id <> ALL(CAST(:leaving_out AS uuid[]))"
            params["leaving_out"] = list(leaving_out)
        statement = text(
            # Only placeholders and fixed clauses are formatted in: every value is bound.
            f"WITH w(k, category, slot, depth, e) AS (VALUES {', '.join(rows_sql)}) "  # noqa: S608
            "SELECT 'n' AS kind, w.k, NULL::integer AS other, n.memory_id, n.content, n.slot, "
            "n.slot_value, n.updated_at, n.distance FROM w CROSS JOIN LATERAL ("
            "SELECT m.memory_id, m.content, m.slot, m.slot_value, m.updated_at, "
            "m.embedding <=> w.e AS distance FROM memories AS m "
            f"WHERE {current} AND m.embedding_model = :model {leave} "
            "ORDER BY m.embedding <=> w.e LIMIT w.depth) AS n "
            "UNION ALL SELECT 's', w.k, NULL, m.memory_id, m.content, m.slot, m.slot_value, "
            "m.updated_at, CASE WHEN m.embedding_model = :model THEN m.embedding <=> w.e END "
            f"FROM w JOIN memories AS m ON {current} AND m.slot = w.slot "
            "UNION ALL SELECT 'p', a.k, b.k, NULL, NULL, NULL, NULL, NULL, a.e <=> b.e "
            "FROM w AS a JOIN w AS b ON a.k < b.k AND a.category = b.category "
            "UNION ALL SELECT 't', NULL, NULL, NULL, NULL, NULL, NULL, now(), NULL"
        )
        found = {index: Found(depth) for index, _, _, depth, _ in wanted}
        distances: dict[tuple[int, int], float] = {}
        now = datetime.min.replace(tzinfo=UTC)
        for row in (await self.db.execute(statement, params)).all():
            if row.kind == "t":
                now = row.updated_at
            elif row.kind == "p":
                distances[(row.k, row.other)] = row.distance
            else:
                stored = Stored(
                    row.memory_id,
                    row.content,
                    row.slot,
                    row.slot_value,
                    row.updated_at,
                    row.distance,
                )
                target = found[row.k].nearest if row.kind == "n" else found[row.k].same_slot
                target.append(stored)
        for entry in found.values():
            # The lateral scan's order, made explicit: closest first, ties as they came.
            entry.nearest.sort(key=lambda stored: stored.distance or 0.0)
        return found, distances, now

    async def write(self, user_id: str | None, rows: Sequence[tuple[str, Row]]) -> None:
        """A batch's rows as they end: new ones inserted, restated ones rewritten (keeping the
        greater confidence), superseded ones marked; one statement each, whatever their number."""
        added = [(category, row) for category, row in rows if row.inserted]
        if added:
            await self.db.execute(_INSERT_MEMORIES, {**self._arrays(added), "user_id": user_id})
        restated = [
            (category, row) for category, row in rows if not row.inserted and row.values is not None
        ]
        if restated:
            await self.db.execute(_RESTATE_MEMORIES, self._arrays(restated))
        superseded = [row for _, row in rows if not row.inserted and row.superseded_by is not None]
        if superseded:
            await self.db.execute(
                _SUPERSEDE_MEMORIES,
                {
                    "tenant_id": self.scope.tenant_id,
                    "memory_id": [row.memory_id for row in superseded],
                    "superseded_by": [row.superseded_by for row in superseded],
                },
            )

    def _arrays(self, rows: Sequence[tuple[str, Row]]) -> dict[str, Any]:
        """The arrays of ``_ROW_COLUMNS`` for ``rows``, one element a row, in order."""
        given = [row.values or {} for _, row in rows]
        params: dict[str, Any] = {
            "tenant_id": self.scope.tenant_id,
            "memory_id": [row.memory_id for _, row in rows],
            "category": [category for category, _ in rows],
            "superseded_by": [row.superseded_by for _, row in rows],
            "confidence": [row.confidence for _, row in rows],
            "days": [row.days for _, row in rows],
        }
        for name, _, _ in _VALUE_COLUMNS:
            params[name] = [values[name] for values in given]
        params["source_seqs"] = [seqs_text(seqs) for seqs in params["source_seqs"]]
        return params

    async def insert_events(self, events: Sequence[dict[str, Any]]) -> None:
        """A batch's ``memory_events`` rows, in order, in one statement."""
        if not events:
            return
        params: dict[str, Any] = {"tenant_id": self.scope.tenant_id}
        for name, _, _ in _EVENT_COLUMNS:
            params[name] = [event.get(name) for event in events]
        params["source_seqs"] = [seqs_text(seqs) for seqs in params["source_seqs"]]
        params["details"] = [json.dumps(details) for details in params["details"]]
        await self.db.execute(_INSERT_EVENTS, params)
