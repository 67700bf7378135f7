"""History search reads each message's words from a stored column.

A phrase query (``"billing service"``) cannot be decided by the GIN index alone: the index holds
which messages have each word, not where. Postgres then checks every candidate again, and with
an index over an expression that means building the candidate's ``tsvector`` again from its
content: a phrase of two common words rebuilt thousands of them per search (about 0.6-1 s at
15 000 messages). Now:

- ``messages.content_words`` is a generated, stored ``tsvector``: the same words as before (the
  first 100 000 characters, ``/``, ``.`` and ``\\`` read as spaces), computed on insert and
  recomputed by Postgres whenever ``content_text`` changes (a redaction removes the words at
  once). The append function and every insert name their columns, so none of them changes.
- ``ix_messages_content_words`` indexes that column instead of the expression, with
  ``fastupdate = off``: every insert merges its words into the index at once. With GIN's
  pending list, right after heavy appends Postgres costs the index scan with the whole unmerged
  list and plans a sequential scan instead; without it, the plan keeps the index for every
  query shape. The price, measured: a batch of 100 appends about 17 ms slower (36 ms at p50
  instead of 19 ms).
- ``workmem_history_search`` matches and ranks on the stored column, so the recheck reads stored
  positions and ranking rebuilds nothing.

Adding the column rewrites ``messages`` once, under its lock (appends wait). The index is built
``CONCURRENTLY`` outside the revision's transaction, after dropping what an interrupted earlier
run may have left; the old index is dropped the same way only once the function no longer
needs it.

Revision ID: 20261201_2246_stored_words
Revises: 20261201_2205_redactions
Create Date: 2026-12-01 22:46:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261201_2246_stored_words"
down_revision: str | None = "20261201_2205_redactions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WORDS = "to_tsvector('english'::regconfig, translate(left(content_text, 100000), '/.\\', '   '))"
INDEX = "ix_messages_content_words"
OLD_INDEX = f"CREATE INDEX CONCURRENTLY {INDEX} ON messages USING gin (({WORDS}))"
NEW_INDEX = (
    f"CREATE INDEX CONCURRENTLY {INDEX} ON messages USING gin (content_words)"
    " WITH (fastupdate = off)"
)
SIGNATURE = """
CREATE OR REPLACE FUNCTION workmem_history_search(
    p_agent_session_id uuid, p_query text, p_from_seq bigint, p_to_seq bigint, p_limit integer
) RETURNS TABLE (seq bigint, rank real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET plan_cache_mode = force_custom_plan
"""
STORED = (
    SIGNATURE
    + """AS $$
DECLARE
    v_words tsquery := websearch_to_tsquery('english'::regconfig, p_query);
BEGIN
    IF querytree(v_words) = 'T' THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT found.seq, ts_rank_cd(found.content_words, v_words, 1)
    FROM (
        SELECT m.seq, m.content_words
        FROM public.messages m
        WHERE m.tenant_id = workmem_verified_tenant()
          AND m.agent_session_id = p_agent_session_id
          AND m.seq BETWEEN p_from_seq AND p_to_seq
          AND m.content_words @@ v_words
        ORDER BY m.seq DESC
        LIMIT 100
    ) AS found
    ORDER BY 2 DESC, found.seq DESC
    LIMIT p_limit;
END
$$
"""
)
PREVIOUS = (
    SIGNATURE
    + f"""AS $$
DECLARE
    v_words tsquery := websearch_to_tsquery('english'::regconfig, p_query);
BEGIN
    IF querytree(v_words) = 'T' THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT found.seq,
           ts_rank_cd(
               to_tsvector('english'::regconfig,
                           translate(left(found.content_text, 10000), '/.\\', '   ')),
               v_words, 1)
    FROM (
        SELECT m.seq, m.content_text
        FROM public.messages m
        WHERE m.tenant_id = workmem_verified_tenant()
          AND m.agent_session_id = p_agent_session_id
          AND m.seq BETWEEN p_from_seq AND p_to_seq
          AND {WORDS.replace("content_text", "m.content_text")} @@ v_words
        ORDER BY m.seq DESC
        LIMIT 100
    ) AS found
    ORDER BY 2 DESC, found.seq DESC
    LIMIT p_limit;
END
$$
"""
)


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(
        "ALTER TABLE messages ADD COLUMN IF NOT EXISTS content_words tsvector"
        f" GENERATED ALWAYS AS ({WORDS}) STORED"
    )
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}_stored")
        op.execute(NEW_INDEX.replace(INDEX, f"{INDEX}_stored"))
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(STORED)
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(f"ALTER INDEX {INDEX}_stored RENAME TO {INDEX}")


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}_expression")
        op.execute(OLD_INDEX.replace(INDEX, f"{INDEX}_expression"))
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(PREVIOUS)
    op.execute("ALTER TABLE messages DROP COLUMN content_words")  # and its index
    op.execute(f"ALTER INDEX {INDEX}_expression RENAME TO {INDEX}")
