"""Every path that can see more than one tenant is listed in docs/operations.md, and only those.

The database's ``SECURITY DEFINER`` functions, the calls of them in the code, and the places
that could widen a login (role switches, ``row_security``, the owner's URL) are compared with
the document's inventory; a new one fails here until it is listed.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import text

from app.db import Database
from tests.support.privileged import documented

ROOT = Path(__file__).resolve().parent.parent
# Policies run as whoever reads: the one definer function they call is executable by all.
FOR_EVERY_ROLE = {"workmem_verified_tenant"}
FUNCTION_CALL = re.compile(r"\b(workmem_[a-z_]+)\(")


def application_sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text()
        for path in sorted((ROOT / "app").rglob("*.py"))
    }


async def test_the_definer_functions_are_exactly_the_documented_ones(
    admin_database: Database,
) -> None:
    async with admin_database.unscoped() as db:
        rows = (
            await db.execute(
                text(
                    "SELECT p.proname, pg_get_userbyid(p.proowner), p.proconfig"
                    " FROM pg_proc p WHERE p.prosecdef"
                    " AND p.pronamespace = 'public'::regnamespace"
                )
            )
        ).all()
    assert {name for name, _, _ in rows} == set(documented())
    for name, owner, config in rows:
        assert owner == "workmem_definer", name
        assert "search_path=pg_catalog, public, pg_temp" in (config or []), name


async def test_every_pinned_search_path_puts_pg_temp_last(admin_database: Database) -> None:
    """Left out, pg_temp is searched first for tables: a caller's temporary table would shadow
    a real one inside the function."""
    async with admin_database.unscoped() as db:
        paths = (
            await db.execute(
                text(
                    "SELECT p.proname, c FROM pg_proc p, unnest(p.proconfig) c"
                    " WHERE p.pronamespace = 'public'::regnamespace"
                    " AND c LIKE 'search\\_path=%'"
                )
            )
        ).all()
    assert {name for name, _ in paths} >= {"workmem_append", "workmem_schema_revision"}
    for name, setting in paths:
        assert setting.endswith(", pg_temp"), (name, setting)


async def test_the_definer_functions_are_not_executable_by_everyone(
    admin_database: Database,
) -> None:
    async with admin_database.unscoped() as db:
        public = (
            await db.execute(
                text(
                    "SELECT p.proname FROM pg_proc p WHERE p.prosecdef"
                    " AND p.pronamespace = 'public'::regnamespace"
                    " AND has_function_privilege('public', p.oid, 'EXECUTE')"
                )
            )
        ).all()
    assert {name for (name,) in public} == FOR_EVERY_ROLE


def test_every_call_of_a_privileged_function_is_where_the_inventory_says() -> None:
    inventory = documented()
    calls: dict[str, set[str]] = {}
    for module, source in application_sources().items():
        for name in FUNCTION_CALL.findall(source):
            calls.setdefault(name, set()).add(module)
    # The quota lock runs as the caller (SECURITY INVOKER); the token's entry
    # (``workmem_enter_tenant``, invoker too) is no longer called by the code: the append enters
    # its token itself.
    invoker = {"workmem_quota_lock"}
    called = {name: modules for name, modules in calls.items() if name not in invoker}
    listed = {name for name, module in inventory.items() if module is not None}
    assert set(called) == listed, "a privileged function is called but not listed"
    for name, modules in called.items():
        assert modules == {inventory[name]}, (name, modules)
    for name in invoker:
        assert calls[name] == {"app/sessions/repository.py"}, name


def test_nothing_in_the_application_widens_its_login() -> None:
    widening = re.compile(
        r"SET\s+(?:LOCAL\s+)?ROLE|set_config\(.role.|row_security|BYPASSRLS|CREATE\s+FUNCTION",
        re.IGNORECASE,
    )
    found = [module for module, source in application_sources().items() if widening.search(source)]
    # The login check names BYPASSRLS in order to refuse it, and auditor logins are created
    # NOBYPASSRLS (by `workmem auditors`, on the owner's connection); nothing else may.
    assert found == ["app/audit/repository.py", "app/db.py"]
    assert "NOBYPASSRLS" in (ROOT / "app" / "audit" / "repository.py").read_text()
    assert "rolbypassrls" in (ROOT / "app" / "db.py").read_text()


def test_the_owners_url_is_used_for_migrations_only() -> None:
    users = [
        module
        for module, source in application_sources().items()
        if "admin_database_url" in source or "migration_url" in source
    ]
    # The command line only: migrations (base, database) and auditor logins, which are roles
    # (operators).
    assert users == [
        "app/cli/base.py",
        "app/cli/database.py",
        "app/cli/operators.py",
        "app/config.py",
    ]
