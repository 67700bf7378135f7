"""Exact vector search reads an index, not the table: ``ix_memories_vector_scope``.

Exact search over a user's or a category's memories compared the query with each of their rows,
read from the table, where a share of a big tenant lies spread over about as many pages as it
has rows (a 5 % user of 100 000 memories: 4 700 pages for 5 000 rows). This covering btree holds
the current memories ordered by tenant, category and user, with the vector and every column the
search filters on or returns, so the same rows are read as neighbours from a few hundred index
pages and the table is not touched (an index-only scan).

A btree entry must fit in a third of a page (2 704 bytes), so the index holds only rows whose
user id and embedder name take at most 320 bytes together (every realistic one), and only when
the vector column has at most ``MAX_COVERED_DIM`` dimensions (384 by default; a larger vector is
left out of line in the table anyway, so this revision then creates only the second index). The
rest, normally none, have their own small partial index, ``ix_memories_long_scope``, so that
search reads them through it rather than through the table. Both predicates are repeated word
for word by the search statement (``app/memories/search_sql.py``): that is how the planner
proves each index may serve it.

Any pgvector works: the vector is only carried by the btree (no operator class). Building it
blocks writes to ``memories`` while it runs (seconds per 100 000 memories).

Revision ID: 20261202_0310_vector_scope
Revises: 20261202_0305_definer_append
Create Date: 2026-12-02 03:10:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "20261202_0310_vector_scope"
down_revision: str | None = "20261202_0305_definer_append"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MAX_COVERED_DIM = 512
"""The largest vector the covering index carries: its entries then take at most about 2 530
bytes (8 header and null map, 16 tenant, 68 category, 334 user id and embedder name, 4 × 512 +
8 vector, 16 id, 16 timestamps, alignment), under the btree's 2 704."""
SHORT = "COALESCE(octet_length(user_id), 0) + octet_length(embedding_model) <= 320"
LONG = "COALESCE(octet_length(user_id), 0) + octet_length(embedding_model) > 320"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    dim = (
        op.get_bind()
        .exec_driver_sql(
            "SELECT atttypmod FROM pg_attribute"
            " WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
        )
        .scalar_one()
    )
    if dim <= MAX_COVERED_DIM:
        op.execute(
            "CREATE INDEX ix_memories_vector_scope ON memories (tenant_id, category, user_id)"
            " INCLUDE (embedding, embedding_model, expires_at, updated_at, memory_id)"
            f" WHERE superseded_by IS NULL AND {SHORT}"
        )
    op.execute(
        "CREATE INDEX ix_memories_long_scope ON memories (tenant_id, category, user_id)"
        f" WHERE {LONG}"
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("DROP INDEX ix_memories_long_scope")
    op.execute("DROP INDEX IF EXISTS ix_memories_vector_scope")
