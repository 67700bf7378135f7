"""Quotas checked and recorded in one step, in the database.

The stored-bytes quota is checked by the append statement itself, and the agent-session quota
by the transaction that creates the agent session, each under the tenant's quota lock (a
transaction-level advisory lock taken by ``workmem_quota_lock``): concurrent appends and creates
of one tenant, in any number of processes, wait for each other there, so none overshoots.

- ``workmem_quota_lock(tenant)``: the lock; callers take it before any agent-session row lock,
  so it never waits in a cycle with one.
- ``workmem_append`` gains ``p_quota_bytes`` (``NULL``: no quota). With a quota, it takes the
  lock, and refuses with SQLSTATE ``WMQ01`` when the tenant's stored bytes (the sum over its
  agent sessions) plus the new messages' would pass it; nothing is stored then. The bytes are
  counted once, here: the JSON text of each message and its metadata, as before.

Revision ID: 20261201_2135_atomic_quotas
Revises: 20261201_2125_definer_path
Create Date: 2026-12-01 21:35:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261201_2135_atomic_quotas"
down_revision: str | None = "20261201_2125_definer_path"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"

QUOTA_LOCK = """
CREATE FUNCTION workmem_quota_lock(p_tenant_id uuid) RETURNS void
LANGUAGE sql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('workmem-quota:' || p_tenant_id::text, 0))
$$
"""

# The append of revision 0007, with the quota check. Without a quota it does what it did.
APPEND_BODY = """
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
    PERFORM set_config('app.tenant_id', p_tenant_id::text, true);
%(quota_lock)s    SELECT s.last_seq, s.archived_upto_seq, s.keep_recent_count, s.pending_tokens,
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
%(quota_check)s    IF v_keep = 0 THEN
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
LOCK = """    IF p_quota_bytes IS NOT NULL THEN
        PERFORM workmem_quota_lock(p_tenant_id);
    END IF;
"""
CHECK = """    IF p_quota_bytes IS NOT NULL THEN
        -- The quota is the tenant's, whichever user the agent session belongs to.
        SELECT coalesce(sum(s.stored_bytes), 0) INTO v_used
          FROM agent_sessions s WHERE s.tenant_id = p_tenant_id;
        IF v_used + v_new_bytes > p_quota_bytes THEN
            RAISE EXCEPTION 'this tenant stores % bytes of messages; % more would pass its '
                            'quota of %', v_used, v_new_bytes, p_quota_bytes
                  USING ERRCODE = 'WMQ01';
        END IF;
    END IF;
"""
RETURNS = """RETURNS TABLE (seq bigint, turn integer, created_at timestamptz, pending_tokens bigint,
                 archived_upto_seq bigint, last_seq bigint)
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp"""
ARGUMENTS = """p_tenant_id uuid, p_agent_session_id uuid, p_user_id text, p_roles text[],
    p_messages jsonb[], p_token_counts integer[], p_texts text[], p_metadata jsonb[],
    p_created_at timestamptz[]"""
OLD = f"workmem_append({ARGUMENTS})"
NEW = f"workmem_append({ARGUMENTS}, p_quota_bytes bigint)"


def _create(signature: str, *, quota: bool) -> None:
    body = APPEND_BODY.replace("%(quota_lock)s", LOCK if quota else "").replace(
        "%(quota_check)s", CHECK if quota else ""
    )
    op.execute(f"CREATE FUNCTION {signature} {RETURNS} AS $$ {body} $$")
    op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {APP_ROLE}")


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(QUOTA_LOCK)
    op.execute("REVOKE ALL ON FUNCTION workmem_quota_lock(uuid) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION workmem_quota_lock(uuid) TO {APP_ROLE}")
    op.execute(f"DROP FUNCTION {OLD}")
    _create(NEW, quota=True)


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(f"DROP FUNCTION {NEW}")
    _create(OLD, quota=False)
    op.execute("DROP FUNCTION workmem_quota_lock(uuid)")
