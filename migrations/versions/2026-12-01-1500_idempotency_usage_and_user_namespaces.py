"""Idempotent retries, stored bytes per agent session, per-user external ids, queue metrics.

- ``idempotency_keys``: the first answer of a write sent with an ``Idempotency-Key``, per
  tenant, committed in the same transaction as the write, so a retry gets that answer and
  stores nothing twice.
- ``agent_sessions.stored_bytes``: the JSON bytes of the agent session's messages and their
  metadata, kept by the append statement on the row it already locks (no hot row per tenant),
  for the stored-bytes quota. Backfilled in SQL.
- ``external_id`` becomes unique per tenant **and user**: a key bound to one user can no longer
  learn, from a 409, that another user of its tenant chose the same name.
- Two privileged functions: the archive queue's figures for ``/metrics`` (no tenant ids), and
  the purge of expired idempotency keys.

Revision ID: 0007
Revises: 0004
Create Date: 2026-12-01 15:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::uuid"
PINNED = "SET search_path = pg_catalog, public"

DEFINER_FUNCTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "workmem_archive_queue()",
        "TABLE (status text, archives bigint, oldest_age_s double precision)",
        """
        #variable_conflict use_column
        BEGIN
            -- Only unfinished archives, through the partial index of the claim: the cost
            -- follows the queue, never the history.
            RETURN QUERY
                SELECT a.status::text, count(*),
                       coalesce(extract(epoch FROM now() - min(a.created_at)), 0)::float8
                  FROM archives a
                 WHERE a.status IN ('pending', 'running')
                 GROUP BY a.status;
        END
        """,
    ),
    (
        "workmem_purge_idempotency_keys(p_before timestamptz)",
        "bigint",
        """
        DECLARE
            v_count bigint;
        BEGIN
            DELETE FROM idempotency_keys k WHERE k.created_at < p_before;
            GET DIAGNOSTICS v_count = ROW_COUNT;
            RETURN v_count;
        END
        """,
    ),
)

# The append of revision 0003, unchanged but for ``stored_bytes`` (the JSON text of every new
# message and its metadata, as Postgres prints it), kept on the row the append already locks.
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
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant_id::text, true);
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
           %(stored_bytes)s
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
STORED_BYTES = """stored_bytes = s.stored_bytes + (
               SELECT coalesce(sum(octet_length(m::text)), 0) FROM unnest(p_messages) m
           ) + (
               SELECT coalesce(sum(octet_length(d::text)), 0) FROM unnest(p_metadata) d
           ),"""
APPEND_SIGNATURE = """workmem_append(
    p_tenant_id uuid, p_agent_session_id uuid, p_user_id text, p_roles text[],
    p_messages jsonb[], p_token_counts integer[], p_texts text[], p_metadata jsonb[],
    p_created_at timestamptz[]
) RETURNS TABLE (seq bigint, turn integer, created_at timestamptz, pending_tokens bigint,
                 archived_upto_seq bigint, last_seq bigint)
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public"""


def replace_append(stored_bytes: str) -> None:
    body = APPEND_BODY.replace("%(stored_bytes)s", stored_bytes)
    op.execute(f"CREATE OR REPLACE FUNCTION {APPEND_SIGNATURE} AS $$ {body} $$")


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "idempotency_keys",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("idempotency_key", sa.Text(), nullable=False),
        sa.Column("request_sha256", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.SmallInteger(), nullable=True),
        sa.Column("response_body", sa.LargeBinary(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.tenant_id"],
            name=op.f("fk_idempotency_keys_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "idempotency_key", name=op.f("pk_idempotency_keys")),
    )
    op.create_index("ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"])
    op.execute("ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON idempotency_keys "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_keys TO {APP_ROLE}")
    # The purge of expired keys crosses tenants (a named function, below).
    op.execute(
        f"CREATE POLICY cross_tenant_definer ON idempotency_keys TO {DEFINER_ROLE} "
        "USING (true) WITH CHECK (true)"
    )
    op.execute(f"GRANT SELECT, DELETE ON idempotency_keys TO {DEFINER_ROLE}")

    op.add_column(
        "agent_sessions",
        sa.Column("stored_bytes", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
    )
    op.execute(
        """
        UPDATE agent_sessions s SET stored_bytes = totals.bytes
          FROM (SELECT m.tenant_id, m.agent_session_id,
                       sum(octet_length(m.message::text)
                           + coalesce(octet_length(m.metadata::text), 0)) AS bytes
                  FROM messages m GROUP BY m.tenant_id, m.agent_session_id) totals
         WHERE totals.tenant_id = s.tenant_id AND totals.agent_session_id = s.agent_session_id
        """
    )
    replace_append(STORED_BYTES)

    op.drop_constraint("uq_agent_sessions_tenant_id_external_id", "agent_sessions", type_="unique")
    op.create_index(
        "uq_agent_sessions_tenant_id_user_id_external_id",
        "agent_sessions",
        ["tenant_id", "user_id", "external_id"],
        unique=True,
        postgresql_where=sa.text("external_id IS NOT NULL"),
        postgresql_nulls_not_distinct=True,
    )

    for signature, returns, body in DEFINER_FUNCTIONS:
        name = signature.split("(", 1)[0]
        arguments = signature[len(name) :]
        op.execute(
            f"CREATE FUNCTION {signature} RETURNS {returns} LANGUAGE plpgsql "
            f"SECURITY DEFINER {PINNED} AS $fn${body}$fn$"
        )
        op.execute(f"ALTER FUNCTION {name}{arguments} OWNER TO {DEFINER_ROLE}")
        op.execute(f"REVOKE ALL ON FUNCTION {name}{arguments} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {name}{arguments} TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    for signature, _, _ in DEFINER_FUNCTIONS:
        op.execute(f"DROP FUNCTION {signature}")
    op.drop_index("uq_agent_sessions_tenant_id_user_id_external_id", table_name="agent_sessions")
    # Names shared by two users of one tenant cannot go back to one namespace: say which.
    op.execute(
        """
        DO $$
        DECLARE v_name text;
        BEGIN
            SELECT external_id INTO v_name FROM agent_sessions
             WHERE external_id IS NOT NULL
             GROUP BY tenant_id, external_id HAVING count(*) > 1 LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'external_id % is used by several users of one tenant; rename '
                                'one of them before downgrading', v_name;
            END IF;
        END
        $$
        """
    )
    op.create_unique_constraint(
        "uq_agent_sessions_tenant_id_external_id", "agent_sessions", ["tenant_id", "external_id"]
    )
    replace_append("")
    op.drop_column("agent_sessions", "stored_bytes")
    op.drop_table("idempotency_keys")
