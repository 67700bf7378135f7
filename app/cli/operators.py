"""The operator's commands: tenants, API keys, auditor logins, and maintenance of the
pending-token counters and failed archives.
"""

from __future__ import annotations

import uuid
from typing import Annotated

import typer

from app.cli.base import (
    cli,
    echo_json,
    run_db,
    run_operator,
    runtime,
)
from app.db import Database
from app.tenancy import service as tenancy
from app.tenancy.principal import Role

tenants_cli = typer.Typer(help="Tenants (operator).", no_args_is_help=True)
cli.add_typer(tenants_cli, name="tenants")

keys_cli = typer.Typer(help="API keys (operator).", no_args_is_help=True)
cli.add_typer(keys_cli, name="keys")

pending_cli = typer.Typer(help="The pending_tokens counter.", no_args_is_help=True)
cli.add_typer(pending_cli, name="pending-tokens")

archives_cli = typer.Typer(help="Archives (operator).", no_args_is_help=True)
cli.add_typer(archives_cli, name="archives")

auditors_cli = typer.Typer(
    help="Database logins that read one tenant's audit views (operator; they are roles, so "
    "these commands use the schema owner's connection, WORKMEM_ADMIN_DATABASE_URL).",
    no_args_is_help=True,
)
cli.add_typer(auditors_cli, name="auditors")


@tenants_cli.command("create")
def tenants_create(name: Annotated[str, typer.Argument(help="display name")]) -> None:
    """Create a tenant and print it as JSON."""

    async def work(database: Database) -> dict[str, str]:
        async with database.unscoped() as db:
            tenant = await tenancy.create_tenant(db, name)
            return {"tenant_id": str(tenant.tenant_id), "name": tenant.name}

    echo_json(run_db(work, runtime().url))


@keys_cli.command("create")
def keys_create(
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
    role: Annotated[Role, typer.Option(help="admin, writer or reader")] = Role.WRITER,
    name: Annotated[str | None, typer.Option(help="a label for the key")] = None,
    user_id: Annotated[str | None, typer.Option(help="restrict the key to one user_id")] = None,
) -> None:
    """Issue an API key; the key is printed once and only its hash is stored."""

    async def work(database: Database) -> dict[str, str | None]:
        async with database.unscoped() as db:
            row, plaintext = await tenancy.issue_key(
                db, tenant, role=role, name=name, user_id=user_id
            )
            return {
                "api_key_id": str(row.api_key_id),
                "key": plaintext,
                "role": row.role,
                "user_id": row.user_id,
            }

    echo_json(run_db(work, runtime().url))


@keys_cli.command("revoke")
def keys_revoke(api_key_id: Annotated[uuid.UUID, typer.Argument(help="the key's id")]) -> None:
    """Revoke an API key (requests with it answer 401 within seconds)."""

    async def work(database: Database) -> dict[str, str]:
        async with database.unscoped() as db:
            row = await tenancy.revoke_key(db, api_key_id)
            return {"api_key_id": str(row.api_key_id), "revoked_at": str(row.revoked_at)}

    echo_json(run_db(work, runtime().url))


@pending_cli.command("check")
def pending_tokens_check(
    repair: Annotated[
        bool, typer.Option(help="write the recomputed value where it drifted")
    ] = False,
) -> None:
    """Recompute pending_tokens of every agent session from its messages and report drift."""
    from app.sessions.maintenance import check_all_pending

    report = run_db(lambda database: check_all_pending(database, repair=repair), runtime().url)
    echo_json(report)
    if report["drifted"] and not repair:
        raise typer.Exit(code=1)


@archives_cli.command("retry")
def archives_retry(
    tenant: Annotated[uuid.UUID | None, typer.Option(help="only this tenant")] = None,
    agent_session: Annotated[uuid.UUID | None, typer.Option(help="only this agent session")] = None,
    archive_seq: Annotated[int | None, typer.Option(help="only this archive")] = None,
) -> None:
    """Re-queue failed archives (all of them, or those matching the filters); each re-queue is
    recorded as the operator's action."""
    from app.archives.queue import requeue_failed

    async def work(database: Database) -> list[dict[str, object]]:
        async with database.unscoped() as db:
            return await requeue_failed(
                db, tenant_id=tenant, agent_session_id=agent_session, archive_seq=archive_seq
            )

    requeued = run_db(work, runtime().url)
    echo_json({"requeued": requeued})


@archives_cli.command("clear")
def archives_clear(
    tenant: Annotated[uuid.UUID, typer.Option(help="the archive's tenant")],
    agent_session: Annotated[uuid.UUID, typer.Option(help="the archive's agent session")],
    archive_seq: Annotated[int, typer.Option(help="the archive", min=1)],
    reason: Annotated[str | None, typer.Option(help="why, kept in the audit trail")] = None,
) -> None:
    """Set one failed archive aside for good: it never runs again and the next archive of its
    agent session covers its messages. Recorded as the operator's action."""
    from app.archives.actions import ArchiveActions
    from app.tenancy.principal import Scope

    async def work(database: Database) -> dict[str, object]:
        async with database.tenant(tenant) as db:
            archive = await ArchiveActions(db, Scope(tenant), None).clear(
                agent_session, archive_seq, reason
            )
            return {
                "tenant_id": str(tenant),
                "agent_session_id": str(archive.agent_session_id),
                "archive_seq": archive.archive_seq,
                "status": archive.status.value,
            }

    echo_json({"cleared": run_operator(work, runtime().url)})


@auditors_cli.command("create")
def auditors_create(
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
    name: Annotated[
        str | None, typer.Option(help="login name (default: wm_auditor_<random>)")
    ] = None,
) -> None:
    """Create a read-only login for TENANT's audit views; print its connection string once."""
    from app.audit import auditors

    resolved = runtime()

    async def work(database: Database) -> dict[str, str]:
        async with database.unscoped() as db:
            login = await auditors.create(
                db, database_url=resolved.url, tenant_id=tenant, login_role=name
            )
        return {
            "login_role": login.login_role,
            "tenant_id": str(login.tenant_id),
            "connection_url": login.connection_url,
        }

    echo_json(run_operator(work, resolved.migration_url()))


@auditors_cli.command("list")
def auditors_list(
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
) -> None:
    """List the auditor logins of TENANT."""
    from app.audit import auditors

    async def work(database: Database) -> list[str]:
        async with database.unscoped() as db:
            return await auditors.listed(db, tenant)

    listed = run_operator(work, runtime().migration_url())
    echo_json({"tenant_id": str(tenant), "login_roles": listed})


@auditors_cli.command("drop")
def auditors_drop(
    login_role: Annotated[str, typer.Argument(help="the login to drop")],
    tenant: Annotated[uuid.UUID, typer.Option("--tenant", help="tenant id")],
) -> None:
    """Drop an auditor login of TENANT (its open connections keep working until they close)."""
    from app.audit import auditors

    async def work(database: Database) -> None:
        async with database.unscoped() as db:
            await auditors.drop(db, tenant_id=tenant, login_role=login_role)

    run_operator(work, runtime().migration_url())
    echo_json({"dropped": login_role})
