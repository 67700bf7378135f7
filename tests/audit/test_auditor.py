"""The auditor role reads the audit views of its own tenant only, whatever it sets.

Logs in as auditor logins made by ``workmem auditors create`` and tries to widen its view by
setting ``app.tenant_id`` to another tenant, and by roles it is not granted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from app.cli import cli
from tests.audit.conftest import workmem
from tests.audit.fixtures import AuditData
from tests.support.postgres import DatabaseUrls

AUDIT_RELATIONS = (
    "wm_section_versions",
    "wm_current_sections",
    "wm_guard_events",
    "wm_section_timeline",
    "wm_restored_items",
    "wm_archive_daily",
    "wm_item_authority",
)
runner = CliRunner()


def tenants_seen(connection: psycopg.Connection[Any]) -> dict[str, set[uuid.UUID]]:
    return {
        relation: {row[0] for row in connection.execute(f"SELECT tenant_id FROM {relation}")}  # noqa: S608 - a fixed list of names
        for relation in AUDIT_RELATIONS
    }


def test_an_auditor_sees_its_tenant_even_when_it_sets_another(
    auditor_url: str, audit_data: AuditData
) -> None:
    own, other = audit_data.tenant.tenant_id, audit_data.other.tenant_id
    with psycopg.connect(auditor_url, autocommit=True) as connection:
        assert tenants_seen(connection) == {key: {own} for key in AUDIT_RELATIONS}
        connection.execute("SELECT set_config('app.tenant_id', %s, false)", (str(other),))
        assert tenants_seen(connection) == {key: {own} for key in AUDIT_RELATIONS}
        presence = connection.execute(
            "SELECT * FROM wm_text_presence(%s, 'on-call rota')", (audit_data.other_session,)
        ).fetchall()
        assert presence == []
        agent_sessions = connection.execute(
            "SELECT DISTINCT agent_session_id FROM wm_section_versions"
        ).fetchall()
        assert {row[0] for row in agent_sessions} == {
            audit_data.billing_uuid,
            audit_data.support_uuid,
        }


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM messages",
        "SELECT * FROM api_keys",
        "SELECT * FROM agent_sessions",
        "SELECT overview FROM archives",
        "SELECT last_error FROM archives",
        "SET ROLE workmem_app",
        "DELETE FROM wm_section_versions",
        "UPDATE wm_section_versions SET content = ''",
    ],
)
def test_an_auditor_reads_nothing_else_and_writes_nothing(auditor_url: str, statement: str) -> None:
    with (
        psycopg.connect(auditor_url, autocommit=True) as connection,
        pytest.raises(
            (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction)
        ),
    ):
        connection.execute(statement.encode())


def test_a_login_without_a_tenant_sees_nothing(
    audit_urls: DatabaseUrls, audit_data: AuditData
) -> None:
    """Membership in workmem_auditor alone (no mapping in auditor_logins) opens no tenant."""
    owner = make_url(audit_urls.admin).set(drivername="postgresql")
    login = f"unmapped_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(owner.render_as_string(False), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {login} LOGIN IN ROLE workmem_auditor".encode())
        try:
            url = owner.set(username=login, password=None).render_as_string(False)
            with psycopg.connect(url, autocommit=True) as connection:
                connection.execute(
                    "SELECT set_config('app.tenant_id', %s, false)",
                    (str(audit_data.tenant.tenant_id),),
                )
                assert tenants_seen(connection) == {key: set() for key in AUDIT_RELATIONS}
        finally:
            admin.execute(f"DROP ROLE {login}".encode())


@pytest.fixture
def other_auditor_url(audit_data: AuditData, cli_env: dict[str, str]) -> Iterator[str]:
    tenant = str(audit_data.other.tenant_id)
    created = workmem(["auditors", "create", "--tenant", tenant, "--name", "auditor_b"], cli_env)
    assert created["login_role"] == "auditor_b"
    listed = workmem(["auditors", "list", "--tenant", tenant], cli_env)
    assert listed["login_roles"] == ["auditor_b"]
    yield str(created["connection_url"])
    workmem(["auditors", "drop", "auditor_b", "--tenant", tenant], cli_env)
    assert workmem(["auditors", "list", "--tenant", tenant], cli_env)["login_roles"] == []


def test_each_tenant_has_its_own_auditors(
    other_auditor_url: str, auditor_url: str, audit_data: AuditData
) -> None:
    with psycopg.connect(other_auditor_url, autocommit=True) as connection:
        connection.execute(
            "SELECT set_config('app.tenant_id', %s, false)", (str(audit_data.tenant.tenant_id),)
        )
        seen = tenants_seen(connection)
    assert seen["wm_section_versions"] == {audit_data.other.tenant_id}
    assert seen["wm_archive_daily"] == {audit_data.other.tenant_id}


def test_an_auditor_reads_no_other_tenants_login_names(
    other_auditor_url: str, auditor_url: str, audit_data: AuditData
) -> None:
    """The service's tenant policy on auditor_logins is permissive for every role: without the
    restrictive one, setting app.tenant_id showed the other tenant's auditor logins."""
    for url, other in (
        (other_auditor_url, audit_data.tenant.tenant_id),
        (auditor_url, audit_data.other.tenant_id),
    ):
        with psycopg.connect(url, autocommit=True) as connection:
            own = connection.execute("SELECT session_user::text").fetchone()
            connection.execute("SELECT set_config('app.tenant_id', %s, false)", (str(other),))
            names = connection.execute("SELECT login_role FROM auditor_logins").fetchall()
        assert own is not None
        assert names == [(own[0],)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["auditors", "create", "--tenant", str(uuid.UUID(int=1))], "does not exist"),
        (["auditors", "create", "--tenant", "{tenant}", "--name", "Bad-Name"], "login name"),
        (["auditors", "create", "--tenant", "{tenant}", "--name", "workmem_app"], "exists"),
        (["auditors", "drop", "postgres", "--tenant", "{tenant}"], "no auditor login"),
    ],
)
def test_auditor_commands_fail_with_one_line(
    args: list[str], message: str, audit_data: AuditData, cli_env: dict[str, str]
) -> None:
    tenant = str(audit_data.tenant.tenant_id)
    result = runner.invoke(cli, [arg.format(tenant=tenant) for arg in args], env=cli_env)
    assert result.exit_code == 1
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output
