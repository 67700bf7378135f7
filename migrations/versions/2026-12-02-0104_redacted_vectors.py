"""A redacted memory keeps no vector: ``memories.embedding`` may be NULL.

Redacting a message replaces the content of the memories drawn from it; their vectors, made from
the old text, still placed them by its meaning. Redaction now sets the vector to NULL and the
embedder (``embedding_model``) to ``[redacted]``, which no vector search compares and re-embedding
passes by. Existing redacted memories lose their vectors here too. Downgrading gives them a
vector again: the zero vector, which no search compares either (their embedder stays
``[redacted]``).

Revision ID: 20261202_0104_redacted_vectors
Revises: 20261202_0102_ledger_views
Create Date: 2026-12-02 01:04:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "20261202_0104_redacted_vectors"
down_revision: str | None = "20261202_0102_ledger_views"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.alter_column("memories", "embedding", nullable=True)
    op.execute(
        "UPDATE memories SET embedding = NULL, embedding_model = '[redacted]' "
        "WHERE content = '[redacted]'"
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    # The column's own dimension, read from the catalogue (vector's typmod is its dimension).
    op.execute(
        """
        DO $$
        DECLARE dim integer;
        BEGIN
            SELECT a.atttypmod INTO dim FROM pg_attribute a
             WHERE a.attrelid = 'memories'::regclass AND a.attname = 'embedding';
            EXECUTE format(
                'UPDATE memories SET embedding = array_fill(0::real, ARRAY[%s])::vector '
                'WHERE embedding IS NULL', dim);
        END
        $$
        """
    )
    op.alter_column("memories", "embedding", nullable=False)
