"""Scanning every table as the schema owner for a string: where it is still stored."""

from __future__ import annotations

import uuid

from sqlalchemy import text

from app.db import Database

_COLUMNS = text(
    """
    SELECT c.table_name, c.column_name, c.data_type
      FROM information_schema.columns c
      JOIN information_schema.tables t USING (table_schema, table_name)
     WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
     ORDER BY c.table_name, c.ordinal_position
    """
)


async def tables_holding(admin_database: Database, needle: str) -> list[str]:
    """``table.column`` of every column of every table whose value contains ``needle`` (text,
    JSON, arrays as text; byte strings read as UTF-8 where they are)."""
    found: list[str] = []
    async with admin_database.unscoped() as db:
        columns = (await db.execute(_COLUMNS)).all()
        for table, column, data_type in columns:
            if data_type == "bytea":
                value = f"encode(\"{column}\", 'escape')"
            else:
                value = f'"{column}"::text'
            # Names read from the catalogue, never from input.
            query = f'SELECT count(*) FROM "{table}" WHERE strpos({value}, :needle) > 0'  # noqa: S608
            hit = await db.scalar(text(query), {"needle": needle})
            if hit:
                found.append(f"{table}.{column}")
    return found


async def rows_holding(
    admin_database: Database, needle: str, *, tenant_id: uuid.UUID
) -> dict[str, int]:
    """``table.column`` → rows whose value contains ``needle``, every column of every table
    (whatever its type, read as text; byte strings as escaped text), among the rows of
    ``tenant_id`` in tables that have a ``tenant_id`` column and among all rows elsewhere.
    Read from the catalogue, so a table added later is scanned too."""
    found: dict[str, int] = {}
    async with admin_database.unscoped() as db:
        columns = (await db.execute(_COLUMNS)).all()
        tenanted = {table for table, column, _ in columns if column == "tenant_id"}
        for table, column, data_type in columns:
            if data_type == "bytea":
                value = f"encode(\"{column}\", 'escape')"
            else:
                value = f'"{column}"::text'
            scope = "tenant_id = :tenant_id AND " if table in tenanted else ""
            # Names read from the catalogue, never from input.
            query = f'SELECT count(*) FROM "{table}" WHERE {scope}strpos({value}, :needle) > 0'  # noqa: S608
            hit = await db.scalar(text(query), {"needle": needle, "tenant_id": tenant_id})
            if hit:
                found[f"{table}.{column}"] = int(hit)
    return found


async def tenant_row_counts(admin_database: Database, tenant_id: uuid.UUID) -> dict[str, int]:
    """Rows of ``tenant_id`` in every table with a ``tenant_id`` column."""
    counts: dict[str, int] = {}
    async with admin_database.unscoped() as db:
        columns = (await db.execute(_COLUMNS)).all()
        for table in sorted({table for table, column, _ in columns if column == "tenant_id"}):
            query = f'SELECT count(*) FROM "{table}" WHERE tenant_id = :tenant_id'  # noqa: S608
            counts[table] = int(await db.scalar(text(query), {"tenant_id": tenant_id}) or 0)
    return counts
