"""Scanning every table as the schema owner for a string: where it is still stored."""

from __future__ import annotations

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
