"""The tenant of a transaction is a signed token, and crossing tenants takes the service key.

Until now row-level security compared ``tenant_id`` with ``app.tenant_id``, a setting any SQL
of the service's login could change, and the privileged functions served whoever called them.
Now:

- ``workmem_keyring`` (one row, readable by ``workmem_definer`` alone) holds a random MAC key
  and the SHA-256 of the service key.
- A *tenant token* is ``<tenant id>.<expiry, epoch seconds>.<HMAC-SHA256>``; the service sets
  it with ``set_config('app.tenant_token', …, true)``. ``workmem_verified_tenant()`` checks it
  and returns the tenant, or NULL for anything forged, expired or absent. Every tenant policy
  reads it through an initplan, ``(SELECT workmem_verified_tenant())``: once per statement,
  not per row; the definer functions that keep to one tenant read it too.
- Tokens come from ``workmem_authenticate(prefix, secret)`` (an API key, checked in the
  database) or, for the service's own work across tenants (workers, operator commands),
  ``workmem_tenant_token(tenant, service_key)``.
- The functions that act across tenants (tenants and keys, the archive claim and re-queue, the
  tenant list, the queue figures, the idempotency purge, the webhook claim) refuse a caller
  whose transaction does not carry the service key (``app.service_key``).

Revision ID: 20261201_2145_tenant_tokens
Revises: 20261201_2135_atomic_quotas
Create Date: 2026-12-01 21:45:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261201_2145_tenant_tokens"
down_revision: str | None = "20261201_2135_atomic_quotas"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "workmem_app"
DEFINER_ROLE = "workmem_definer"
PINNED = "SET search_path = pg_catalog, public, pg_temp"
OLD_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::uuid"
NEW_TENANT = "(SELECT workmem_verified_tenant())"
TOKEN_LIFETIME_S = 900

# The functions that act across tenants: each refuses a transaction without the service key.
GUARDED = (
    "workmem_create_tenant(text)",
    "workmem_issue_api_key(uuid, text, text, text, text, text)",
    "workmem_revoke_api_key(uuid)",
    "workmem_claim_archive(double precision, uuid, uuid)",
    "workmem_requeue_failed(uuid, uuid, integer)",
    "workmem_tenant_ids()",
    "workmem_archive_queue()",
    "workmem_purge_idempotency_keys(timestamp with time zone)",
    "workmem_claim_webhook_deliveries(double precision, integer)",
)
GUARD = (
    "BEGIN IF NOT workmem_is_service() THEN RAISE EXCEPTION "
    "'this function acts across tenants: it needs the service key' USING ERRCODE = '42501'; "
    "END IF;"
)
# The functions that keep to the transaction's tenant.
ONE_TENANT = (
    "workmem_history_search(uuid, text, bigint, bigint, integer)",
    "workmem_memory_text_candidates(text, vector, integer, text, text, text, text, boolean)",
)

FIND_API_KEY = """
CREATE FUNCTION workmem_find_api_key(p_prefix text)
RETURNS TABLE (tenant_id uuid, api_key_id uuid, role text, user_id text, secret_sha256 text,
               revoked_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
    UPDATE api_keys k SET last_used_at = now()
     WHERE k.prefix = p_prefix
       AND coalesce(k.last_used_at, 'epoch'::timestamptz) < now() - interval '1 minute';
    RETURN QUERY
        SELECT k.tenant_id, k.api_key_id, k.role::text, k.user_id, k.secret_sha256::text,
               k.revoked_at
          FROM api_keys k WHERE k.prefix = p_prefix;
END
$fn$
"""

# Internal: the HMAC-SHA256 of a message under the keyring's key (the inner and outer padded
# keys are stored, so no bytewise XOR is needed here). EXECUTE for no one but its owner.
NEW_FUNCTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "workmem_mac(p_message text)",
        f"""
CREATE FUNCTION workmem_mac(p_message text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER {PINNED} AS $fn$
    SELECT encode(sha256(k.outer_key || sha256(k.inner_key || convert_to(p_message, 'UTF8'))),
                  'hex')
      FROM workmem_keyring k
$fn$
""",
        (),
    ),
    (
        "workmem_sign(p_tenant_id uuid)",
        f"""
CREATE FUNCTION workmem_sign(p_tenant_id uuid) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER {PINNED} AS $fn$
    SELECT body || '.' || workmem_mac(body)
      FROM (SELECT p_tenant_id::text || '.'
                   || (floor(extract(epoch FROM now()))::bigint + {TOKEN_LIFETIME_S})::text
                   AS body) b
$fn$
""",
        (),
    ),
    (
        "workmem_verified_tenant()",
        f"""
CREATE FUNCTION workmem_verified_tenant() RETURNS uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER {PINNED} AS $fn$
DECLARE
    v_token text := current_setting('app.tenant_token', true);
    v_parts text[];
BEGIN
    IF v_token IS NULL OR v_token !~ ('^[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-'
                                      '[0-9a-f]{{12}}\\.[0-9]{{1,12}}\\.[0-9a-f]{{64}}$') THEN
        RETURN NULL;
    END IF;
    v_parts := string_to_array(v_token, '.');
    IF v_parts[2]::bigint < extract(epoch FROM now()) THEN
        RETURN NULL;
    END IF;
    -- Compared as digests, so the time the comparison takes says nothing of the MAC.
    IF sha256(convert_to(workmem_mac(v_parts[1] || '.' || v_parts[2]), 'UTF8'))
       IS DISTINCT FROM sha256(convert_to(v_parts[3], 'UTF8')) THEN
        RETURN NULL;
    END IF;
    RETURN v_parts[1]::uuid;
END
$fn$
""",
        ("PUBLIC",),
    ),
    (
        "workmem_is_service(p_service_key text)",
        f"""
CREATE FUNCTION workmem_is_service(p_service_key text DEFAULT NULL) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER {PINNED} AS $fn$
    SELECT coalesce((
        SELECT k.service_key_sha256 = encode(sha256(convert_to(
                   coalesce(p_service_key, current_setting('app.service_key', true), ''),
                   'UTF8')), 'hex')
          FROM workmem_keyring k), false)
$fn$
""",
        (APP_ROLE,),
    ),
    (
        "workmem_tenant_token(p_tenant_id uuid, p_service_key text)",
        f"""
CREATE FUNCTION workmem_tenant_token(p_tenant_id uuid, p_service_key text DEFAULT NULL)
RETURNS text LANGUAGE plpgsql SECURITY DEFINER {PINNED} AS $fn$
BEGIN
    IF p_tenant_id IS NULL OR NOT workmem_is_service(p_service_key) THEN
        RETURN NULL;
    END IF;
    RETURN workmem_sign(p_tenant_id);
END
$fn$
""",
        (APP_ROLE,),
    ),
    (
        "workmem_enter_tenant(p_token text)",
        f"""
CREATE FUNCTION workmem_enter_tenant(p_token text) RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY INVOKER {PINNED} AS $fn$
BEGIN
    PERFORM set_config('app.tenant_token', coalesce(p_token, ''), true);
    RETURN workmem_verified_tenant();
END
$fn$
""",
        (APP_ROLE,),
    ),
    (
        "workmem_authenticate(p_prefix text, p_secret text)",
        f"""
CREATE FUNCTION workmem_authenticate(p_prefix text, p_secret text)
RETURNS TABLE (tenant_id uuid, api_key_id uuid, role text, user_id text, token text)
LANGUAGE plpgsql SECURITY DEFINER {PINNED} AS $fn$
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
$fn$
""",
        (APP_ROLE,),
    ),
)

# Replaces the pinned function bodies in place (pg_get_functiondef gives back the whole
# CREATE OR REPLACE statement, owner and grants stay).
REWRITE = """
DO $$
DECLARE v_definition text;
BEGIN
    v_definition := pg_get_functiondef('{function}'::regprocedure);
    EXECUTE {expression};
END
$$
"""


def rewrite(function: str, expression: str) -> None:
    op.execute(REWRITE.format(function=function, expression=expression))


def argument_types(signature: str) -> str:
    """``name(p_a text, p_b uuid)`` → ``name(text, uuid)``."""
    name, _, arguments = signature.partition("(")
    types = [part.split()[-1] for part in arguments.rstrip(")").split(",") if part.strip()]
    return f"{name}({', '.join(types)})"


def quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(
        """
        CREATE TABLE workmem_keyring (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            inner_key bytea NOT NULL,
            outer_key bytea NOT NULL,
            service_key_sha256 text
        )
        """
    )
    # 64 random bytes (the block size of SHA-256) from four random UUIDs' 488 random bits,
    # stored XORed with the HMAC paddings.
    op.execute(
        """
        DO $$
        DECLARE
            v_key bytea := decode(
                replace(gen_random_uuid()::text || gen_random_uuid()::text
                        || gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex');
            v_inner bytea := v_key;
            v_outer bytea := v_key;
        BEGIN
            FOR i IN 0..63 LOOP
                v_inner := set_byte(v_inner, i, get_byte(v_key, i) # 54);
                v_outer := set_byte(v_outer, i, get_byte(v_key, i) # 92);
            END LOOP;
            INSERT INTO workmem_keyring (inner_key, outer_key) VALUES (v_inner, v_outer);
        END
        $$
        """
    )
    op.execute("REVOKE ALL ON workmem_keyring FROM PUBLIC")
    op.execute(f"GRANT SELECT ON workmem_keyring TO {DEFINER_ROLE}")
    for signature, definition, grantees in NEW_FUNCTIONS:
        function = argument_types(signature)
        op.execute(definition)
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
        if "SECURITY DEFINER" in definition:
            op.execute(f"ALTER FUNCTION {function} OWNER TO {DEFINER_ROLE}")
        for grantee in grantees:
            op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {grantee}")
    op.execute("DROP FUNCTION workmem_find_api_key(text)")
    for function in GUARDED:
        rewrite(function, f"regexp_replace(v_definition, '\\mBEGIN\\M', {quoted(GUARD)})")
    for function in ONE_TENANT:
        rewrite(
            function, f"replace(v_definition, {quoted(OLD_TENANT)}, 'workmem_verified_tenant()')"
        )
    set_policies(NEW_TENANT)


def set_policies(new: str) -> None:
    """Every tenant policy compares tenant_id with ``new`` instead of ``old``."""
    escaped = new.replace("'", "''")
    op.execute(
        f"""
        DO $$
        DECLARE p record;
        BEGIN
            FOR p IN
                SELECT c.relname FROM pg_policy y JOIN pg_class c ON c.oid = y.polrelid
                 WHERE y.polname = 'tenant_isolation'
                   AND c.relnamespace = 'public'::regnamespace
            LOOP
                EXECUTE format('ALTER POLICY tenant_isolation ON %I USING (tenant_id = {escaped})'
                               ' WITH CHECK (tenant_id = {escaped})', p.relname);
            END LOOP;
        END
        $$
        """
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    set_policies(OLD_TENANT)
    for function in ONE_TENANT:
        rewrite(
            function, f"replace(v_definition, 'workmem_verified_tenant()', {quoted(OLD_TENANT)})"
        )
    for function in GUARDED:
        rewrite(function, f"replace(v_definition, {quoted(GUARD)}, 'BEGIN')")
    op.execute(FIND_API_KEY)
    op.execute(f"ALTER FUNCTION workmem_find_api_key(text) OWNER TO {DEFINER_ROLE}")
    op.execute("REVOKE ALL ON FUNCTION workmem_find_api_key(text) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION workmem_find_api_key(text) TO {APP_ROLE}")
    for signature, _, _ in reversed(NEW_FUNCTIONS):
        op.execute(f"DROP FUNCTION {argument_types(signature)}")
    op.execute("DROP TABLE workmem_keyring")
