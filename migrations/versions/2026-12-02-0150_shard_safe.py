"""Shard-safe archive claim and API-key lookup: every statement names one tenant or a small table
that a tenant-distributed cluster keeps whole on every node.

- ``claimable_archives`` holds one row per agent session with pending or running archives
  (tenant, agent session, when it may next have work). The commit writes it in its own
  transaction; a re-queue, a retry and a finished archive move its time; the claim takes the
  oldest due row with ``SKIP LOCKED`` and then claims that agent session's oldest claimable
  archive by its tenant, so no statement of the claim reads archives across tenants. A row whose
  agent session has nothing left is removed by the claim that finds it so.
- ``api_key_prefixes`` maps a key's prefix to its tenant and id: authentication and revocation
  look the tenant up there first, then read the key by its tenant. It keeps prefixes unique
  across tenants, so ``api_keys`` itself needs only ``(tenant_id, prefix)`` unique.

Revision ID: 20261202_0150_shard_safe
Revises: 20261202_0104_redacted_vectors
Create Date: 2026-12-02 01:50:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0150_shard_safe"
down_revision: str | None = "20261202_0104_redacted_vectors"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
CURRENT_TENANT = "(SELECT workmem_verified_tenant())"
PINNED = "SET search_path = pg_catalog, public, pg_temp"
GUARD = (
    "IF NOT workmem_is_service() THEN RAISE EXCEPTION "
    "'this function acts across tenants: it needs the service key' USING ERRCODE = '42501'; "
    "END IF;"
)
KEY_RETURNS = (
    "TABLE (api_key_id uuid, tenant_id uuid, prefix text, role text, name text,"
    " user_id text, created_at timestamptz, revoked_at timestamptz)"
)
KEY_COLUMNS = (
    "k.api_key_id, k.tenant_id, k.prefix::text, k.role::text, k.name, k.user_id,"
    " k.created_at, k.revoked_at"
)

ISSUE = "workmem_issue_api_key(p_tenant_id uuid, p_prefix text, p_secret_sha256 text, p_role text, p_name text, p_user_id text)"  # noqa: E501
ISSUE_BODY = f"""
#variable_conflict use_column
DECLARE
    v_api_key_id uuid;
BEGIN {GUARD}
    IF NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = p_tenant_id) THEN
        RETURN;
    END IF;
    -- The prefix first: its primary key keeps prefixes unique across tenants.
    v_api_key_id := gen_random_uuid();
    INSERT INTO api_key_prefixes (prefix, tenant_id, api_key_id)
    VALUES (p_prefix, p_tenant_id, v_api_key_id);
    RETURN QUERY
        INSERT INTO api_keys AS k (tenant_id, api_key_id, prefix, secret_sha256, role, name,
                                   user_id)
        VALUES (p_tenant_id, v_api_key_id, p_prefix, p_secret_sha256, p_role, p_name, p_user_id)
        RETURNING {KEY_COLUMNS};
END
"""
ISSUE_BODY_BEFORE = f"""
#variable_conflict use_column
BEGIN {GUARD}
    IF NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = p_tenant_id) THEN
        RETURN;
    END IF;
    RETURN QUERY
        INSERT INTO api_keys AS k (tenant_id, prefix, secret_sha256, role, name, user_id)
        VALUES (p_tenant_id, p_prefix, p_secret_sha256, p_role, p_name, p_user_id)
        RETURNING {KEY_COLUMNS};
END
"""

REVOKE = "workmem_revoke_api_key(p_api_key_id uuid)"
REVOKE_BODY = f"""
#variable_conflict use_column
DECLARE
    v_tenant_id uuid;
BEGIN {GUARD}
    SELECT p.tenant_id INTO v_tenant_id FROM api_key_prefixes p
     WHERE p.api_key_id = p_api_key_id;
    IF v_tenant_id IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
        UPDATE api_keys AS k SET revoked_at = coalesce(k.revoked_at, now())
         WHERE k.tenant_id = v_tenant_id AND k.api_key_id = p_api_key_id
        RETURNING {KEY_COLUMNS};
END
"""
REVOKE_BODY_BEFORE = f"""
#variable_conflict use_column
BEGIN {GUARD}
    RETURN QUERY
        UPDATE api_keys AS k SET revoked_at = coalesce(k.revoked_at, now())
         WHERE k.api_key_id = p_api_key_id
        RETURNING {KEY_COLUMNS};
END
"""

AUTHENTICATE = "workmem_authenticate(p_prefix text, p_secret text)"
AUTHENTICATE_RETURNS = (
    "TABLE (tenant_id uuid, api_key_id uuid, role text, user_id text, token text)"
)
AUTHENTICATE_BODY = """
#variable_conflict use_column
DECLARE
    v_digest text := encode(sha256(convert_to(coalesce(p_secret, ''), 'UTF8')), 'hex');
    v_tenant_id uuid;
BEGIN
    SELECT p.tenant_id INTO v_tenant_id FROM api_key_prefixes p WHERE p.prefix = p_prefix;
    IF v_tenant_id IS NULL THEN
        RETURN;
    END IF;
    -- last_used_at is for humans, not an audit log: at most one write per key a minute.
    UPDATE api_keys k SET last_used_at = now()
     WHERE k.tenant_id = v_tenant_id AND k.prefix = p_prefix AND k.revoked_at IS NULL
       AND k.secret_sha256 = v_digest
       AND coalesce(k.last_used_at, 'epoch'::timestamptz) < now() - interval '1 minute';
    RETURN QUERY
        SELECT k.tenant_id, k.api_key_id, k.role::text, k.user_id, workmem_sign(k.tenant_id)
          FROM api_keys k
         WHERE k.tenant_id = v_tenant_id AND k.prefix = p_prefix AND k.revoked_at IS NULL
           AND k.secret_sha256 = v_digest;
END
"""
AUTHENTICATE_BODY_BEFORE = """
#variable_conflict use_column
DECLARE
    v_digest text := encode(sha256(convert_to(coalesce(p_secret, ''), 'UTF8')), 'hex');
BEGIN
    -- last_used_at is for humans, not an audit log: at most one write per key a minute.
    UPDATE api_keys k SET last_used_at = now()
     WHERE k.prefix = p_prefix AND k.revoked_at IS NULL AND k.secret_sha256 = v_digest
       AND coalesce(k.last_used_at, 'epoch'::timestamptz) < now() - interval '1 minute';
    RETURN QUERY
        SELECT k.tenant_id, k.api_key_id, k.role::text, k.user_id, workmem_sign(k.tenant_id)
          FROM api_keys k
         WHERE k.prefix = p_prefix AND k.revoked_at IS NULL AND k.secret_sha256 = v_digest;
END
"""

CLAIM = (
    "workmem_claim_archive(p_lease_s double precision, p_tenant_id uuid, p_agent_session_id uuid)"
)
CLAIM_RETURNS = (
    "TABLE (tenant_id uuid, agent_session_id uuid, archive_seq integer, attempt integer)"
)
# At most this many due agent sessions are looked at by one claim (the others wait for the next).
CLAIM_VISITS = 16
CLAIM_BODY = f"""
#variable_conflict use_column
DECLARE
    v_tenant_id uuid;
    v_agent_session_id uuid;
    v_next timestamptz;
BEGIN {GUARD}
    FOR v_visit IN 1..{CLAIM_VISITS} LOOP
        SELECT q.tenant_id, q.agent_session_id INTO v_tenant_id, v_agent_session_id
          FROM claimable_archives q
         WHERE q.available_at <= now()
           AND (p_tenant_id IS NULL OR q.tenant_id = p_tenant_id)
           AND (p_agent_session_id IS NULL OR q.agent_session_id = p_agent_session_id)
         ORDER BY q.available_at
         LIMIT 1
           FOR UPDATE SKIP LOCKED;
        EXIT WHEN NOT FOUND;
        -- The agent session's oldest unfinished archive, if it is due: archives of one agent
        -- session run strictly in order.
        RETURN QUERY
            WITH candidate AS (
                SELECT a.archive_seq
                  FROM archives a
                 WHERE a.tenant_id = v_tenant_id AND a.agent_session_id = v_agent_session_id
                   AND a.status IN ('pending', 'running')
                 ORDER BY a.archive_seq
                 LIMIT 1
            ), due AS (
                SELECT a.archive_seq
                  FROM archives a JOIN candidate c USING (archive_seq)
                 WHERE a.tenant_id = v_tenant_id AND a.agent_session_id = v_agent_session_id
                   AND a.available_at <= now()
                   AND (a.status = 'pending' OR a.lease_until < now())
                   FOR UPDATE OF a SKIP LOCKED
            )
            UPDATE archives AS a
               SET status = 'running',
                   attempt = a.attempt + 1,
                   lease_until = now() + make_interval(secs => p_lease_s)
              FROM due d
             WHERE a.tenant_id = v_tenant_id AND a.agent_session_id = v_agent_session_id
               AND a.archive_seq = d.archive_seq
            RETURNING a.tenant_id, a.agent_session_id, a.archive_seq, a.attempt;
        IF FOUND THEN
            -- Due again when the lease passes, unless the archive finishes first.
            UPDATE claimable_archives q
               SET available_at = now() + make_interval(secs => p_lease_s)
             WHERE q.tenant_id = v_tenant_id AND q.agent_session_id = v_agent_session_id;
            RETURN;
        END IF;
        -- Nothing due: when the oldest unfinished archive is, or no row at all when none is left.
        SELECT CASE WHEN a.status = 'running' THEN a.lease_until ELSE a.available_at END
          INTO v_next
          FROM archives a
         WHERE a.tenant_id = v_tenant_id AND a.agent_session_id = v_agent_session_id
           AND a.status IN ('pending', 'running')
         ORDER BY a.archive_seq
         LIMIT 1;
        IF NOT FOUND THEN
            DELETE FROM claimable_archives q
             WHERE q.tenant_id = v_tenant_id AND q.agent_session_id = v_agent_session_id;
        ELSE
            -- Due but locked by another claim: look again in a second.
            UPDATE claimable_archives q
               SET available_at = greatest(v_next, now() + interval '1 second')
             WHERE q.tenant_id = v_tenant_id AND q.agent_session_id = v_agent_session_id;
        END IF;
    END LOOP;
END
"""
CLAIM_BODY_BEFORE = f"""
#variable_conflict use_column
BEGIN {GUARD}
    RETURN QUERY
    WITH candidate AS (
        SELECT a.tenant_id, a.agent_session_id, a.archive_seq
        FROM archives a
        WHERE a.status IN ('pending', 'running')
          AND a.available_at <= now()
          AND (a.status = 'pending' OR a.lease_until < now())
          AND (p_tenant_id IS NULL OR a.tenant_id = p_tenant_id)
          AND (p_agent_session_id IS NULL OR a.agent_session_id = p_agent_session_id)
          -- Archives of one agent session run strictly in order.
          AND NOT EXISTS (
              SELECT 1 FROM archives older
              WHERE older.tenant_id = a.tenant_id
                AND older.agent_session_id = a.agent_session_id
                AND older.archive_seq < a.archive_seq
                AND older.status IN ('pending', 'running')
          )
        ORDER BY a.available_at, a.created_at
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE archives AS a
    SET status = 'running',
        attempt = a.attempt + 1,
        lease_until = now() + make_interval(secs => p_lease_s)
    FROM candidate c
    WHERE a.tenant_id = c.tenant_id
      AND a.agent_session_id = c.agent_session_id
      AND a.archive_seq = c.archive_seq
    RETURNING a.tenant_id, a.agent_session_id, a.archive_seq, a.attempt;
END
"""

REQUEUE = "workmem_requeue_failed(p_tenant_id uuid, p_agent_session_id uuid, p_archive_seq integer)"
REQUEUE_RETURNS = "TABLE (tenant_id uuid, agent_session_id uuid, archive_seq integer)"


def _requeue_body(*, queued: bool) -> str:
    enqueue = (
        """, queued AS (
            INSERT INTO claimable_archives AS q (tenant_id, agent_session_id, available_at)
            SELECT DISTINCT r.tenant_id, r.agent_session_id, now() FROM requeued r
            ON CONFLICT (tenant_id, agent_session_id) DO UPDATE SET available_at = now()
        )"""
        if queued
        else ""
    )
    return f"""
#variable_conflict use_column
BEGIN {GUARD}
    RETURN QUERY
        WITH requeued AS (
            UPDATE archives AS a
               SET status = 'pending', attempt = 0, available_at = now(), lease_until = NULL,
                   last_error = NULL, error_stage = NULL, finished_at = NULL
             WHERE a.status = 'failed'
               AND (p_tenant_id IS NULL OR a.tenant_id = p_tenant_id)
               AND (p_agent_session_id IS NULL OR a.agent_session_id = p_agent_session_id)
               AND (p_archive_seq IS NULL OR a.archive_seq = p_archive_seq)
            RETURNING a.tenant_id, a.agent_session_id, a.archive_seq
        ), recorded AS (
            INSERT INTO archive_actions (tenant_id, agent_session_id, archive_seq, action, actor)
            SELECT r.tenant_id, r.agent_session_id, r.archive_seq, 'retry', 'operator'
              FROM requeued r
        ){enqueue}
        SELECT r.tenant_id, r.agent_session_id, r.archive_seq FROM requeued r;
END
"""


def _replace(signature: str, returns: str, body: str) -> None:
    op.execute(
        f"CREATE OR REPLACE FUNCTION {signature} RETURNS {returns} LANGUAGE plpgsql "
        f"SECURITY DEFINER {PINNED} AS $fn${body}$fn$"
    )


def _functions(*, after: bool) -> None:
    _replace(ISSUE, KEY_RETURNS, ISSUE_BODY if after else ISSUE_BODY_BEFORE)
    _replace(REVOKE, KEY_RETURNS, REVOKE_BODY if after else REVOKE_BODY_BEFORE)
    _replace(
        AUTHENTICATE, AUTHENTICATE_RETURNS, AUTHENTICATE_BODY if after else AUTHENTICATE_BODY_BEFORE
    )
    _replace(CLAIM, CLAIM_RETURNS, CLAIM_BODY if after else CLAIM_BODY_BEFORE)
    _replace(REQUEUE, REQUEUE_RETURNS, _requeue_body(queued=after))


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "claimable_archives",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("agent_session_id", sa.UUID(), nullable=False),
        sa.Column(
            "available_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "agent_session_id", name=op.f("pk_claimable_archives")
        ),
    )
    op.create_index("ix_claimable_archives_available_at", "claimable_archives", ["available_at"])
    op.execute("ALTER TABLE claimable_archives ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE claimable_archives FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON claimable_archives "
        f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON claimable_archives TO {APP_ROLE}")
    op.execute(
        f"CREATE POLICY cross_tenant_definer ON claimable_archives TO {DEFINER_ROLE} "
        "USING (true) WITH CHECK (true)"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON claimable_archives TO {DEFINER_ROLE}")
    op.execute(
        "INSERT INTO claimable_archives (tenant_id, agent_session_id, available_at)"
        " SELECT tenant_id, agent_session_id, min(available_at) FROM archives"
        " WHERE status IN ('pending', 'running') GROUP BY tenant_id, agent_session_id"
    )

    op.create_table(
        "api_key_prefixes",
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("api_key_id", sa.UUID(), nullable=False),
        sa.PrimaryKeyConstraint("prefix", name=op.f("pk_api_key_prefixes")),
    )
    op.create_index("ix_api_key_prefixes_api_key_id", "api_key_prefixes", ["api_key_id"])
    # Read by the definer functions only; the service may only add its own tenant's prefixes
    # (a tenant admin's new key).
    op.execute("ALTER TABLE api_key_prefixes ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE api_key_prefixes FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON api_key_prefixes FOR INSERT TO {APP_ROLE} "
        f"WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
    op.execute(f"GRANT INSERT ON api_key_prefixes TO {APP_ROLE}")
    op.execute(
        f"CREATE POLICY cross_tenant_definer ON api_key_prefixes TO {DEFINER_ROLE} "
        "USING (true) WITH CHECK (true)"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON api_key_prefixes TO {DEFINER_ROLE}")
    op.execute(
        "INSERT INTO api_key_prefixes (prefix, tenant_id, api_key_id)"
        " SELECT prefix, tenant_id, api_key_id FROM api_keys"
    )
    op.drop_constraint("uq_api_keys_prefix", "api_keys", type_="unique")
    op.create_unique_constraint(
        op.f("uq_api_keys_tenant_id_prefix"), "api_keys", ["tenant_id", "prefix"]
    )
    _functions(after=True)


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    _functions(after=False)
    op.drop_constraint("uq_api_keys_tenant_id_prefix", "api_keys", type_="unique")
    op.create_unique_constraint(op.f("uq_api_keys_prefix"), "api_keys", ["prefix"])
    op.drop_index("ix_api_key_prefixes_api_key_id", table_name="api_key_prefixes")
    op.drop_table("api_key_prefixes")
    op.drop_index("ix_claimable_archives_available_at", table_name="claimable_archives")
    op.drop_table("claimable_archives")
