"""The append checks the tenant token once, not once per statement: ``workmem_append(tenant,
token, …)``.

Until now the append ran as its caller, so row-level security checked the transaction's tenant
token (an HMAC over the keyring) in every statement it ran: the token's entry, the agent
session's lock, the window's tokens, the counters' update (twice: its ``USING`` and its
``WITH CHECK``) and the insert, six signature checks per append, about a quarter of the
database's time for it. Now the append takes the tenant and its token, enters the token (so
what follows in the transaction runs under it, as before), verifies once that it is that
tenant's and runs as ``workmem_definer``, keeping every statement to that tenant by its own
``tenant_id`` filter, like the other functions of one tenant. A forged, altered, expired or
missing token, or another tenant's, answers nothing, as a missing agent session did before.
The stale ``set_config('app.tenant_id', …)`` of the time before tokens is gone, and every
statement keeps one generic plan (the window's token sum was planned again on every call).

Revision ID: 20261202_0305_definer_append
Revises: 20261202_0208_record_contexts
Create Date: 2026-12-02 03:05:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "20261202_0305_definer_append"
down_revision: str | None = "20261202_0208_record_contexts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
PINNED = "SET search_path = pg_catalog, public, pg_temp"
RESULT = """RETURNS TABLE (seq bigint, turn integer, created_at timestamptz, pending_tokens bigint,
                 archived_upto_seq bigint, last_seq bigint)"""
MESSAGES = """p_roles text[], p_messages jsonb[], p_token_counts integer[], p_texts text[],
    p_metadata jsonb[], p_created_at timestamptz[], p_quota_bytes bigint"""
NEW = (
    "workmem_append(p_tenant_id uuid, p_token text, p_agent_session_id uuid, p_user_id text, "
    f"{MESSAGES})"
)
QUOTA_LOCK = "workmem_quota_lock(uuid)"
OLD = f"workmem_append(p_tenant_id uuid, p_agent_session_id uuid, p_user_id text, {MESSAGES})"

# What follows the tenant's entry is the append of revision 2026-12-01-2135_atomic_quotas, each
# statement filtered by the verified tenant (the definer's policy sees every tenant).
BODY = """
#variable_conflict use_column
DECLARE
    v_last bigint;
    v_archived bigint;
    v_keep integer;
    v_pending bigint;
    v_turns integer;
    v_total bigint;
    v_count integer := coalesce(cardinality(p_roles), 0);
    v_first_leaving bigint;
    v_last_leaving bigint;
    v_new_bytes bigint;
    v_used bigint;
BEGIN
%(enter)s
    IF p_quota_bytes IS NOT NULL THEN
        PERFORM workmem_quota_lock(p_tenant_id);
    END IF;
    SELECT s.last_seq, s.archived_upto_seq, s.keep_recent_count, s.pending_tokens,
           s.turn_count, s.total_tokens
      INTO v_last, v_archived, v_keep, v_pending, v_turns, v_total
      FROM agent_sessions s
     WHERE s.tenant_id = p_tenant_id AND s.agent_session_id = p_agent_session_id
       AND (p_user_id IS NULL OR s.user_id = p_user_id)
       FOR UPDATE;
    IF NOT FOUND OR v_count = 0 THEN
        RETURN;
    END IF;
    v_new_bytes := (
        SELECT coalesce(sum(octet_length(m::text)), 0) FROM unnest(p_messages) m
    ) + (
        SELECT coalesce(sum(octet_length(d::text)), 0) FROM unnest(p_metadata) d
    );
    IF p_quota_bytes IS NOT NULL THEN
        -- The quota is the tenant's, whichever user the agent session belongs to.
        SELECT coalesce(sum(s.stored_bytes), 0) INTO v_used
          FROM agent_sessions s WHERE s.tenant_id = p_tenant_id;
        IF v_used + v_new_bytes > p_quota_bytes THEN
            RAISE EXCEPTION 'this tenant stores % bytes of messages; % more would pass its '
                            'quota of %', v_used, v_new_bytes, p_quota_bytes
                  USING ERRCODE = 'WMQ01';
        END IF;
    END IF;
    IF v_keep = 0 THEN
        v_pending := v_pending + (SELECT coalesce(sum(t), 0) FROM unnest(p_token_counts) t);
    ELSE
        -- New message seq s leaves message s - keep out of the window once s - archived > keep.
        v_first_leaving := greatest(v_last + 1, v_archived + v_keep + 1) - v_keep;
        v_last_leaving := v_last + v_count - v_keep;
        IF v_last_leaving >= v_first_leaving THEN
            v_pending := v_pending + (
                SELECT coalesce(sum(m.token_count), 0) FROM messages m
                 WHERE m.tenant_id = p_tenant_id AND m.agent_session_id = p_agent_session_id
                   AND m.seq BETWEEN v_first_leaving AND least(v_last_leaving, v_last)
            ) + (
                SELECT coalesce(sum(p_token_counts[j]), 0)
                  FROM generate_series(greatest(v_first_leaving, v_last + 1) - v_last,
                                       v_last_leaving - v_last) AS j
            );
        END IF;
    END IF;
    UPDATE agent_sessions s
       SET last_seq = v_last + v_count,
           turn_count = v_turns + (SELECT count(*) FROM unnest(p_roles) r WHERE r = 'user'),
           pending_tokens = v_pending,
           total_tokens = v_total + (SELECT coalesce(sum(t), 0) FROM unnest(p_token_counts) t),
           stored_bytes = s.stored_bytes + v_new_bytes,
           updated_at = now()
     WHERE s.tenant_id = p_tenant_id AND s.agent_session_id = p_agent_session_id;
    RETURN QUERY
    WITH stored AS (
        INSERT INTO messages AS m (tenant_id, agent_session_id, seq, role, turn, message,
                                   token_count, content_text, metadata, created_at)
        SELECT p_tenant_id, p_agent_session_id, v_last + u.n, u.role,
               v_turns + (sum(CASE WHEN u.role = 'user' THEN 1 ELSE 0 END)
                          OVER (ORDER BY u.n))::integer,
               u.message, u.token_count, u.content_text, u.metadata,
               coalesce(u.created_at, now())
          FROM unnest(p_roles, p_messages, p_token_counts, p_texts, p_metadata, p_created_at)
               WITH ORDINALITY AS u(role, message, token_count, content_text, metadata,
                                    created_at, n)
        RETURNING m.seq, m.turn, m.created_at
    )
    SELECT stored.seq, stored.turn, stored.created_at, v_pending, v_archived,
           v_last + v_count
      FROM stored ORDER BY stored.seq;
END
"""

# The token is entered for the rest of the transaction and verified once: the append acts only
# for the tenant it names (the tenant is an argument of its own, by which a distributed cluster
# routes the call; docs/scaling.md).
DEFINER_ENTER = """    PERFORM set_config('app.tenant_token', coalesce(p_token, ''), true);
    IF p_tenant_id IS NULL OR workmem_verified_tenant() IS DISTINCT FROM p_tenant_id THEN
        RETURN;
    END IF;"""
INVOKER_ENTER = "    PERFORM set_config('app.tenant_id', p_tenant_id::text, true);"


# One generic plan per statement: without it the window's token sum (a range of the primary
# key) was planned again on every call, a sixth of the append's time.
GENERIC = "SET plan_cache_mode = force_generic_plan"


def _create(signature: str, security: str, enter: str, settings: str) -> None:
    body = BODY.replace("%(enter)s", enter)
    op.execute(
        f"CREATE FUNCTION {signature} {RESULT} LANGUAGE plpgsql {security} {settings} "
        f"AS $fn$ {body} $fn$"
    )


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(f"DROP FUNCTION {OLD}")
    _create(NEW, "SECURITY DEFINER", DEFINER_ENTER, f"{PINNED} {GENERIC}")
    op.execute(f"ALTER FUNCTION {NEW} OWNER TO {DEFINER_ROLE}")
    op.execute(f"REVOKE ALL ON FUNCTION {NEW} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {NEW} TO {APP_ROLE}")
    # The quota lock is taken by the append as its owner now.
    op.execute(f"GRANT EXECUTE ON FUNCTION {QUOTA_LOCK} TO {DEFINER_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(f"DROP FUNCTION {NEW}")
    op.execute(f"REVOKE EXECUTE ON FUNCTION {QUOTA_LOCK} FROM {DEFINER_ROLE}")
    _create(OLD, "SECURITY INVOKER", INVOKER_ENTER, PINNED)
    op.execute(f"REVOKE ALL ON FUNCTION {OLD} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {OLD} TO {APP_ROLE}")
