"""Least privilege: the service logs in as ``workmem_app``; cross-tenant work is named functions.

Row-level security becomes *forced* on every tenant-owned table, so even the tables' owner sees
only the tenant of its transaction. The application role gets ``LOGIN`` (it never was, nor is, a
superuser or ``BYPASSRLS``); the tenant is set per transaction with ``set_config``, never by
switching roles. The few paths that must see more than one tenant are ``SECURITY DEFINER``
functions owned by ``workmem_definer`` (NOLOGIN, ``search_path`` pinned), whose policies alone
reach across tenants: API-key lookup, the operator's tenant and key management, the archive
claim, re-queueing failed archives, the tenant list of maintenance jobs, and readiness. The
append path becomes one invoker function (row-level security applies to it like to any query).

A schema owner that is not a superuser (managed Postgres) runs this revision too. Postgres
refuses the words ``SUPERUSER`` and ``BYPASSRLS`` from anyone else, even to remove them, so they
are said only when ``pg_roles`` shows the application role has one (only a superuser can have
given it). On PostgreSQL 16 and later the creator of ``workmem_definer`` holds only the admin
option on it, while giving a function to the role takes ``SET`` and replacing it later takes
``INHERIT``: an owner that lacks them grants them to itself. A non-superuser may give a function
only to a role that may create in its schema, so such an owner grants ``CREATE`` on ``public``
to ``workmem_definer`` where it may (the database's owner owns ``public`` since PostgreSQL 15);
the downgrade takes it back. Run by a superuser, the revision does what it always did.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 10:00:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
TENANT_TABLES = (
    "tenants",
    "api_keys",
    "agent_sessions",
    "messages",
    "archives",
    "wm_section_versions",
)
PINNED = "SET search_path = pg_catalog, public"

# Each privileged function: (signature, returns, body). Bodies qualify every column they
# return through a table alias, because RETURNS TABLE names are variables inside plpgsql.
DEFINER_FUNCTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "workmem_find_api_key(p_prefix text)",
        "TABLE (tenant_id uuid, api_key_id uuid, role text, user_id text, secret_sha256 text,"
        " revoked_at timestamptz)",
        """
        #variable_conflict use_column
        BEGIN
            -- last_used_at is for humans, not an audit log: at most one write per key a minute.
            UPDATE api_keys k SET last_used_at = now()
             WHERE k.prefix = p_prefix
               AND coalesce(k.last_used_at, 'epoch'::timestamptz) < now() - interval '1 minute';
            RETURN QUERY
                SELECT k.tenant_id, k.api_key_id, k.role::text, k.user_id, k.secret_sha256::text,
                       k.revoked_at
                  FROM api_keys k WHERE k.prefix = p_prefix;
        END
        """,
    ),
    (
        "workmem_create_tenant(p_name text)",
        "TABLE (tenant_id uuid, name text, created_at timestamptz)",
        """
        #variable_conflict use_column
        BEGIN
            RETURN QUERY
                INSERT INTO tenants AS t (name) VALUES (p_name)
                RETURNING t.tenant_id, t.name, t.created_at;
        END
        """,
    ),
    (
        "workmem_issue_api_key(p_tenant_id uuid, p_prefix text, p_secret_sha256 text,"
        " p_role text, p_name text, p_user_id text)",
        "TABLE (api_key_id uuid, tenant_id uuid, prefix text, role text, name text,"
        " user_id text, created_at timestamptz, revoked_at timestamptz)",
        """
        #variable_conflict use_column
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = p_tenant_id) THEN
                RETURN;
            END IF;
            RETURN QUERY
                INSERT INTO api_keys AS k (tenant_id, prefix, secret_sha256, role, name, user_id)
                VALUES (p_tenant_id, p_prefix, p_secret_sha256, p_role, p_name, p_user_id)
                RETURNING k.api_key_id, k.tenant_id, k.prefix::text, k.role::text, k.name,
                          k.user_id, k.created_at, k.revoked_at;
        END
        """,
    ),
    (
        "workmem_revoke_api_key(p_api_key_id uuid)",
        "TABLE (api_key_id uuid, tenant_id uuid, prefix text, role text, name text,"
        " user_id text, created_at timestamptz, revoked_at timestamptz)",
        """
        #variable_conflict use_column
        BEGIN
            RETURN QUERY
                UPDATE api_keys AS k SET revoked_at = coalesce(k.revoked_at, now())
                 WHERE k.api_key_id = p_api_key_id
                RETURNING k.api_key_id, k.tenant_id, k.prefix::text, k.role::text, k.name,
                          k.user_id, k.created_at, k.revoked_at;
        END
        """,
    ),
    (
        "workmem_claim_archive(p_lease_s double precision, p_tenant_id uuid,"
        " p_agent_session_id uuid)",
        "TABLE (tenant_id uuid, agent_session_id uuid, archive_seq integer, attempt integer)",
        """
        #variable_conflict use_column
        BEGIN
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
        """,
    ),
    (
        "workmem_requeue_failed(p_tenant_id uuid, p_agent_session_id uuid, p_archive_seq integer)",
        "TABLE (tenant_id uuid, agent_session_id uuid, archive_seq integer)",
        """
        #variable_conflict use_column
        BEGIN
            RETURN QUERY
                UPDATE archives AS a
                   SET status = 'pending', attempt = 0, available_at = now(), lease_until = NULL,
                       last_error = NULL, error_stage = NULL, finished_at = NULL
                 WHERE a.status = 'failed'
                   AND (p_tenant_id IS NULL OR a.tenant_id = p_tenant_id)
                   AND (p_agent_session_id IS NULL OR a.agent_session_id = p_agent_session_id)
                   AND (p_archive_seq IS NULL OR a.archive_seq = p_archive_seq)
                RETURNING a.tenant_id, a.agent_session_id, a.archive_seq;
        END
        """,
    ),
    (
        "workmem_tenant_ids()",
        "SETOF uuid",
        """
        BEGIN
            RETURN QUERY SELECT t.tenant_id FROM tenants t ORDER BY t.tenant_id;
        END
        """,
    ),
    (
        "workmem_schema_revision()",
        "text",
        """
        BEGIN
            RETURN (SELECT v.version_num FROM alembic_version v LIMIT 1);
        END
        """,
    ),
)

# One append, one statement: lock the agent session, keep pending_tokens by the rule of
# DESIGN 5 (``app/sessions/pending.py`` is its specification, and a property test holds the
# two equal), number and insert the messages, save the counters. SECURITY INVOKER: it sets the
# tenant of its own transaction first, so row-level security applies to every statement in it.
APPEND_FUNCTION = """
CREATE FUNCTION workmem_append(
    p_tenant_id uuid, p_agent_session_id uuid, p_user_id text, p_roles text[],
    p_messages jsonb[], p_token_counts integer[], p_texts text[], p_metadata jsonb[],
    p_created_at timestamptz[]
) RETURNS TABLE (seq bigint, turn integer, created_at timestamptz, pending_tokens bigint,
                 archived_upto_seq bigint, last_seq bigint)
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public AS $$
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
$$
"""


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    # Roles are cluster-wide: another database of the same cluster may have created them.
    op.execute(
        f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{DEFINER_ROLE}') THEN
                CREATE ROLE {DEFINER_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;
            END IF;
            IF NOT pg_has_role(current_user, '{DEFINER_ROLE}', 'MEMBER') THEN
                EXECUTE format('GRANT {DEFINER_ROLE} TO %I', current_user);
            END IF;
            -- PostgreSQL 16+: a role's creator holds only the admin option on it; handing
            -- functions to the definer and replacing them later take SET and INHERIT.
            IF current_setting('server_version_num')::integer >= 160000 THEN
                IF NOT (pg_has_role(current_user, '{DEFINER_ROLE}', 'SET')
                        AND pg_has_role(current_user, '{DEFINER_ROLE}', 'USAGE')) THEN
                    EXECUTE format('GRANT {DEFINER_ROLE} TO %I WITH INHERIT TRUE, SET TRUE',
                                   current_user);
                END IF;
            END IF;
        END
        $$
        """
    )
    # Only a superuser may name SUPERUSER or BYPASSRLS, even to remove them; only a superuser
    # can have given them, so they are named only where the role has them.
    op.execute(
        f"""
        DO $$
        DECLARE
            v_super boolean;
            v_bypass boolean;
        BEGIN
            SELECT r.rolsuper, r.rolbypassrls INTO v_super, v_bypass
              FROM pg_roles r WHERE r.rolname = '{APP_ROLE}';
            IF v_super OR v_bypass THEN
                ALTER ROLE {APP_ROLE} NOSUPERUSER NOBYPASSRLS;
            END IF;
        END
        $$
        """
    )
    op.execute(f"ALTER ROLE {APP_ROLE} LOGIN NOCREATEDB NOCREATEROLE")
    op.execute(f"GRANT USAGE ON SCHEMA public TO {DEFINER_ROLE}")
    # A non-superuser may give a function only to a role that may create in its schema. A
    # superuser needs no such grant and gives none.
    op.execute(
        f"""
        DO $$
        BEGIN
            IF NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user)
               AND NOT has_schema_privilege('{DEFINER_ROLE}', 'public', 'CREATE')
               AND has_schema_privilege('public', 'CREATE WITH GRANT OPTION') THEN
                GRANT CREATE ON SCHEMA public TO {DEFINER_ROLE};
            END IF;
        END
        $$
        """
    )
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY cross_tenant_definer ON {table} TO {DEFINER_ROLE} "
            "USING (true) WITH CHECK (true)"
        )
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {DEFINER_ROLE}")
    op.execute(f"GRANT SELECT ON alembic_version TO {DEFINER_ROLE}")
    for signature, returns, body in DEFINER_FUNCTIONS:
        name = signature.split("(", 1)[0]
        op.execute(
            f"CREATE FUNCTION {signature} RETURNS {returns} LANGUAGE plpgsql "
            f"SECURITY DEFINER {PINNED} AS $fn${body}$fn$"
        )
        arguments = signature[len(name) :]
        op.execute(f"ALTER FUNCTION {name}{arguments} OWNER TO {DEFINER_ROLE}")
        op.execute(f"REVOKE ALL ON FUNCTION {name}{arguments} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {name}{arguments} TO {APP_ROLE}")
    op.execute(APPEND_FUNCTION)
    op.execute("REVOKE ALL ON FUNCTION workmem_append FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION workmem_append TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("DROP FUNCTION workmem_append")
    for signature, _, _ in DEFINER_FUNCTIONS:
        op.execute(f"DROP FUNCTION {signature}")
    op.execute(f"REVOKE SELECT ON alembic_version FROM {DEFINER_ROLE}")
    for table in TENANT_TABLES:
        op.execute(f"REVOKE ALL ON {table} FROM {DEFINER_ROLE}")
        op.execute(f"DROP POLICY cross_tenant_definer ON {table}")
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    op.execute(f"REVOKE CREATE, USAGE ON SCHEMA public FROM {DEFINER_ROLE}")
    # The roles serve every workmem database of the cluster, so they stay, and so does the
    # application role's LOGIN (other databases of the cluster may be at this revision or later).
