"""History search does bounded work for every query shape.

A search could test every message of a long agent session and then build the ``tsvector`` of up
to 1 000 matches again to rank them (each up to 100 000 characters). Now, inside
``workmem_history_search``:

- a query with no word to look for (only exclusions, such as ``-draft``) finds nothing instead
  of testing every message of the range (no index can serve it);
- at most the newest 100 matches in the range are ranked, over their first 10 000 characters,
  so a common word, a phrase or an exclusion stops reading after 100 matches.

The statement's own time is bounded by the caller (``app/history/repository.py``, 2 s).

Revision ID: 20261201_2200_bounded_history
Revises: 20261201_2146_fair_webhook_claim
Create Date: 2026-12-01 22:00:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261201_2200_bounded_history"
down_revision: str | None = "20261201_2146_fair_webhook_claim"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MESSAGE_DOCUMENT = (
    "to_tsvector('english'::regconfig, translate(left(m.content_text, 100000), '/.\\', '   '))"
)
SIGNATURE = """
CREATE OR REPLACE FUNCTION workmem_history_search(
    p_agent_session_id uuid, p_query text, p_from_seq bigint, p_to_seq bigint, p_limit integer
) RETURNS TABLE (seq bigint, rank real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET plan_cache_mode = force_custom_plan
"""
BOUNDED = (
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
          AND {MESSAGE_DOCUMENT} @@ v_words
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
BEGIN
    RETURN QUERY
    SELECT found.seq,
           ts_rank_cd(
               to_tsvector('english'::regconfig,
                           translate(left(found.content_text, 100000), '/.\\', '   ')),
               words, 1)
    FROM (
        SELECT m.seq, m.content_text
        FROM public.messages m
        WHERE m.tenant_id = workmem_verified_tenant()
          AND m.agent_session_id = p_agent_session_id
          AND m.seq BETWEEN p_from_seq AND p_to_seq
          AND {MESSAGE_DOCUMENT}
              @@ websearch_to_tsquery('english'::regconfig, p_query)
        ORDER BY m.seq DESC
        LIMIT 1000
    ) AS found, websearch_to_tsquery('english'::regconfig, p_query) AS words
    ORDER BY 2 DESC, found.seq DESC
    LIMIT p_limit;
END
$$
"""
)


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(BOUNDED)


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(PREVIOUS)
