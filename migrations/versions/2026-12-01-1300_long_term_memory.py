"""Long-term memory: ``memories`` with embeddings and full text, ``memory_events``, and the
archive's report of what extraction did.

``memories`` holds durable facts about a user (profile, preference, entity, event, lesson), each
with its source archive and message seqs, an embedding in ``vector(dim)`` searched through an
HNSW index (``vector_cosine_ops``), the embedder that produced it, and a generated ``tsvector``
under a GIN index, searched through ``workmem_memory_text_candidates`` (a tenant-restricted
``SECURITY DEFINER`` function, so that row-level security does not keep the index unused).
``memory_events`` is the append-only audit of every change (ADD, UPDATE, SUPERSEDE, DELETE); it
keeps only ids once a memory is erased, so it has no foreign key to ``memories``.
``archives.memories`` is the extraction report of each archive.

The vector dimension is fixed here, from ``WORKMEM_EMBEDDING_DIM`` (default 384), read from the
environment by the revision itself; the service refuses to start when its embedder's dimension
differs from the column's.

Revision ID: 0004
Revises: 0005
Create Date: 2026-12-01 13:00:00+00:00
"""

import os
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::uuid"
# pgvector's HNSW index takes at most 2000 dimensions for `vector`.
MAX_INDEXED_DIM = 2000


class Vector(sa.types.UserDefinedType[object]):
    """pgvector's ``vector(dim)``, spelled here so that the revision imports nothing else."""

    cache_ok = True

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def get_col_spec(self, **kw: object) -> str:
        return f"vector({self.dim})"


def embedding_dim() -> int:
    raw = os.environ.get("WORKMEM_EMBEDDING_DIM", "384")
    try:
        dim = int(raw)
    except ValueError:
        raise ValueError(f"WORKMEM_EMBEDDING_DIM must be a whole number, not {raw!r}") from None
    if not 1 <= dim <= MAX_INDEXED_DIM:
        raise ValueError(f"WORKMEM_EMBEDDING_DIM must be 1 to {MAX_INDEXED_DIM}, not {dim}")
    return dim


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    dim = embedding_dim()
    op.add_column(
        "archives", sa.Column("memories", postgresql.JSONB(astext_type=sa.Text()), nullable=True)
    )
    op.create_table(
        "memories",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "memory_id", sa.UUID(), server_default=sa.text("gen_random_uuid()"), nullable=False
        ),
        sa.Column("user_id", sa.Text(), nullable=True),
        sa.Column("agent_id", sa.Text(), nullable=True),
        sa.Column("category", sa.String(length=16), nullable=False),
        sa.Column("slot", sa.Text(), nullable=True),
        sa.Column("slot_value", sa.Text(), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column("archive_seq", sa.Integer(), nullable=False),
        sa.Column(
            "source_seqs",
            postgresql.ARRAY(sa.BigInteger()),
            server_default=sa.text("'{}'::bigint[]"),
            nullable=False,
        ),
        sa.Column("embedding", Vector(dim), nullable=False),
        sa.Column("embedding_model", sa.Text(), nullable=False),
        sa.Column("superseded_by", sa.UUID(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "content_tsv",
            postgresql.TSVECTOR(),
            sa.Computed("to_tsvector('english'::regconfig, content)", persisted=True),
            nullable=False,
        ),
        sa.CheckConstraint(
            "category IN ('profile', 'preference', 'entity', 'event', 'lesson')",
            name=op.f("ck_memories_category"),
        ),
        sa.CheckConstraint(
            "confidence >= 0 AND confidence <= 1", name=op.f("ck_memories_confidence")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_session_id", "archive_seq"],
            ["archives.tenant_id", "archives.agent_session_id", "archives.archive_seq"],
            name=op.f("fk_memories_tenant_id_archives"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "memory_id", name=op.f("pk_memories")),
    )
    op.create_index(
        "ix_memories_tenant_id_user_id_category",
        "memories",
        ["tenant_id", "user_id", "category"],
        unique=False,
    )
    op.create_index(
        "ix_memories_tenant_id_created_at",
        "memories",
        ["tenant_id", "created_at", "memory_id"],
        unique=False,
    )
    op.create_index(
        "ix_memories_tenant_id_agent_session_id",
        "memories",
        ["tenant_id", "agent_session_id", "archive_seq"],
        unique=False,
    )
    op.create_index(
        "ix_memories_embedding",
        "memories",
        ["embedding"],
        unique=False,
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.create_index(
        "ix_memories_content_tsv",
        "memories",
        ["content_tsv"],
        unique=False,
        postgresql_using="gin",
    )
    op.create_table(
        "memory_events",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("event_id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("memory_id", sa.UUID(), nullable=False),
        sa.Column("related_memory_id", sa.UUID(), nullable=True),
        sa.Column("user_id", sa.Text(), nullable=True),
        sa.Column("event", sa.String(length=16), nullable=False),
        sa.Column("old_content", sa.Text(), nullable=True),
        sa.Column("new_content", sa.Text(), nullable=True),
        sa.Column("agent_session_id", sa.UUID(), nullable=True),
        sa.Column("archive_seq", sa.Integer(), nullable=True),
        sa.Column(
            "source_seqs",
            postgresql.ARRAY(sa.BigInteger()),
            server_default=sa.text("'{}'::bigint[]"),
            nullable=False,
        ),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column(
            "details",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "event IN ('ADD', 'UPDATE', 'SUPERSEDE', 'DELETE')",
            name=op.f("ck_memory_events_event"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_memory_events_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "event_id", name=op.f("pk_memory_events")),
    )
    op.create_index(
        "ix_memory_events_tenant_id_memory_id",
        "memory_events",
        ["tenant_id", "memory_id"],
        unique=False,
    )
    op.create_index(
        "ix_memory_events_tenant_id_related_memory_id",
        "memory_events",
        ["tenant_id", "related_memory_id"],
        unique=False,
    )
    op.create_index(
        "ix_memory_events_tenant_id_agent_session_id",
        "memory_events",
        ["tenant_id", "agent_session_id", "archive_seq"],
        unique=False,
    )
    for table in ("memories", "memory_events"):
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
        )
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}")
    # The full-text function reads as workmem_definer, whose policy admits every row (so the
    # planner may use the GIN index); the function itself keeps to the transaction's tenant.
    op.execute(
        f"CREATE POLICY cross_tenant_definer ON memories FOR SELECT TO {DEFINER_ROLE} USING (true)"
    )
    op.execute(f"GRANT SELECT ON memories TO {DEFINER_ROLE}")
    op.execute(TEXT_CANDIDATES_FUNCTION)
    op.execute(f"ALTER FUNCTION {TEXT_CANDIDATES} OWNER TO {DEFINER_ROLE}")
    op.execute(f"REVOKE ALL ON FUNCTION {TEXT_CANDIDATES} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {TEXT_CANDIDATES} TO {APP_ROLE}")


TEXT_CANDIDATES = (
    "workmem_memory_text_candidates(text, vector, integer, text, text, text, text, boolean)"
)

# Row-level security keeps Postgres from using the GIN index for `@@`: its function is not
# leakproof, so under a policy it is only ever evaluated after the policy, row by row. This
# function runs as workmem_definer, whose own policy on memories admits every row, and restricts
# itself to the transaction's tenant, so the index serves the full-text retriever.
# One generic plan: the words vary, the shape of the plan does not, and planning each call
# would cost more than the lookup.
TEXT_CANDIDATES_FUNCTION = f"""
CREATE FUNCTION workmem_memory_text_candidates(
    query text, query_vector vector, k integer, model text, bound_user text, wanted_user text,
    wanted_category text, with_superseded boolean
) RETURNS TABLE (memory_id uuid, text_rank real, similarity float8, updated_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    -- At most 5 k matches are ranked: words common enough to match more say little about
    -- which memory is meant (the vector retriever covers those), and ranking every match of
    -- a common word would cost time in proportion to the table.
    RETURN QUERY
    SELECT found.memory_id, ts_rank_cd(found.content_tsv, words),
           1 - (found.embedding <=> query_vector), found.updated_at
    FROM (
        SELECT m.memory_id, m.content_tsv, m.embedding, m.updated_at
        FROM public.memories m
        WHERE m.tenant_id = {CURRENT_TENANT}
          AND m.content_tsv @@ websearch_to_tsquery('english', query)
          AND m.embedding_model = model
          AND (with_superseded OR m.superseded_by IS NULL)
          AND (bound_user IS NULL OR m.user_id = bound_user)
          AND (wanted_user IS NULL OR m.user_id = wanted_user)
          AND (wanted_category IS NULL OR m.category = wanted_category)
        LIMIT 5 * k
    ) AS found, websearch_to_tsquery('english', query) AS words
    ORDER BY 2 DESC, found.memory_id
    LIMIT k;
END
$$
"""


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(f"DROP FUNCTION {TEXT_CANDIDATES}")
    op.execute(f"REVOKE SELECT ON memories FROM {DEFINER_ROLE}")
    op.drop_index("ix_memory_events_tenant_id_agent_session_id", table_name="memory_events")
    op.drop_index("ix_memory_events_tenant_id_related_memory_id", table_name="memory_events")
    op.drop_index("ix_memory_events_tenant_id_memory_id", table_name="memory_events")
    op.drop_table("memory_events")
    op.drop_index("ix_memories_content_tsv", table_name="memories", postgresql_using="gin")
    op.drop_index("ix_memories_embedding", table_name="memories", postgresql_using="hnsw")
    op.drop_index("ix_memories_tenant_id_agent_session_id", table_name="memories")
    op.drop_index("ix_memories_tenant_id_created_at", table_name="memories")
    op.drop_index("ix_memories_tenant_id_user_id_category", table_name="memories")
    op.drop_table("memories")
    op.drop_column("archives", "memories")
