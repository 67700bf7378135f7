"""``workmem retention``: a tenant's retention policy (show, set) and a pass run now."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.base import CliError, cli, echo_json, run_operator, runtime
from app.db import Database

if TYPE_CHECKING:
    from app.lifecycle.retention_service import StoredRetention

retention_cli = typer.Typer(
    help="Retention and expiry: how long a tenant's raw messages, idle agent sessions and "
    "memories are kept (operator).",
    no_args_is_help=True,
)
cli.add_typer(retention_cli, name="retention")

TENANT = typer.Option("--tenant", help="tenant id")
OFF = "off"


def _days(value: str | None, name: str) -> int | None:
    """A number of days, or ``off``."""
    if value is None or value == OFF:
        return None
    try:
        return int(value)
    except ValueError:
        raise CliError(f"{name} must be a whole number of days or {OFF!r}; got {value!r}") from None


def _memory_days(current: dict[str, int], changes: list[str]) -> dict[str, int]:
    memory_days = dict(current)
    for change in changes:
        category, separator, value = change.partition("=")
        if not separator or not category:
            raise CliError(f"--memory-days takes CATEGORY=DAYS (or CATEGORY=off); got {change!r}")
        days = _days(value, f"memory_days.{category}")
        if days is None:
            memory_days.pop(category, None)
        else:
            memory_days[category] = days
    return memory_days


def _shown(tenant_id: uuid.UUID, stored: StoredRetention) -> dict[str, object]:
    policy = stored.policy
    return {
        "tenant_id": str(tenant_id),
        "archive_messages_days": policy.archive_messages_days,
        "idle_session_days": policy.idle_session_days,
        "memory_days": dict(policy.memory_days),
        "updated_at": None if stored.updated_at is None else stored.updated_at.isoformat(),
        "updated_by": None if stored.updated_by is None else str(stored.updated_by),
    }


async def _require_tenant(database: Database, tenant_id: uuid.UUID) -> None:
    from app.tenancy import service as tenancy

    async with database.unscoped() as db:
        if not await tenancy.tenant_exists(db, tenant_id):
            raise CliError(f"tenant {tenant_id} does not exist")


@retention_cli.command("show")
def retention_show(tenant: Annotated[uuid.UUID, TENANT]) -> None:
    """Print the tenant's policy as JSON (every limit null: everything is kept)."""
    from app.lifecycle.retention_service import get_policy

    async def work(database: Database) -> dict[str, object]:
        await _require_tenant(database, tenant)
        async with database.tenant(tenant) as db:
            return _shown(tenant, await get_policy(db, tenant))

    echo_json(run_operator(work, runtime().url))


@retention_cli.command("set")
def retention_set(
    tenant: Annotated[uuid.UUID, TENANT],
    archive_messages_days: Annotated[
        str | None,
        typer.Option(help="purge raw messages of archives older than DAYS (or 'off')"),
    ] = None,
    idle_session_days: Annotated[
        str | None,
        typer.Option(help="delete agent sessions idle (no append or commit) for DAYS (or 'off')"),
    ] = None,
    memory_days: Annotated[
        list[str] | None,
        typer.Option(
            help="CATEGORY=DAYS: new memories of CATEGORY expire after DAYS (CATEGORY=off: "
            "never); repeatable"
        ),
    ] = None,
) -> None:
    """Change the limits named; the others keep their value. Prints the policy as JSON."""
    from app.lifecycle.retention_policy import PolicyError, Retention
    from app.lifecycle.retention_service import get_policy, set_policy

    async def work(database: Database) -> dict[str, object]:
        await _require_tenant(database, tenant)
        async with database.tenant(tenant) as db:
            current = (await get_policy(db, tenant)).policy
            try:
                policy = Retention.checked(
                    archive_messages_days=current.archive_messages_days
                    if archive_messages_days is None
                    else _days(archive_messages_days, "archive_messages_days"),
                    idle_session_days=current.idle_session_days
                    if idle_session_days is None
                    else _days(idle_session_days, "idle_session_days"),
                    memory_days=_memory_days(dict(current.memory_days), memory_days or []),
                )
            except PolicyError as error:
                raise CliError(str(error)) from None
            return _shown(tenant, await set_policy(db, tenant, policy, updated_by=None))

    echo_json(run_operator(work, runtime().url))


@retention_cli.command("run")
def retention_run(
    batch: Annotated[
        int, typer.Option(min=1, max=100_000, help="rows of each kind per tenant")
    ] = 500,
) -> None:
    """Run one retention pass over every tenant now (the workers run one every
    WORKMEM_RETENTION_EVERY_S) and print what it purged."""
    from app.lifecycle.retention_jobs import run_pass

    async def work(database: Database) -> dict[str, int]:
        report = await run_pass(database, batch=batch)
        return {
            "tenants": report.tenants,
            "archives": report.archives,
            "archive_messages": report.archive_messages,
            "idle_sessions": report.idle_sessions,
            "expired_memories": report.expired_memories,
            "failed_tenants": report.failed_tenants,
        }

    echo_json(run_operator(work, runtime().url))
