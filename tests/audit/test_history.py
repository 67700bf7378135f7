"""GET …/working-memory/history narrowed by from_archive and to_archive, paged as before."""

from __future__ import annotations

from typing import Any

import httpx

from app.db import Database
from app.tenancy import service as tenancy
from app.tenancy.principal import Role
from tests.audit.fixtures import AuditData


async def history(
    http: httpx.AsyncClient, data: AuditData, key: str | None = None, **params: Any
) -> httpx.Response:
    return await http.get(
        f"/v1/sessions/{data.billing}/working-memory/history",
        params=params,
        headers={"Authorization": f"Bearer {key or data.tenant.reader}"},
    )


async def test_from_and_to_archive_narrow_the_history(
    audit_client: httpx.AsyncClient, audit_data: AuditData
) -> None:
    both = (await history(audit_client, audit_data, from_archive=2, to_archive=3)).json()
    assert [(i["archive_seq"], i["position"]) for i in both["items"]] == [
        (archive, position) for archive in (2, 3) for position in range(1, 8)
    ]
    only = await history(audit_client, audit_data, from_archive=2, to_archive=2)
    assert {item["archive_seq"] for item in only.json()["items"]} == {2}
    issues = await history(audit_client, audit_data, section="Open Issues", from_archive=2)
    assert [(i["archive_seq"], i["reason"]) for i in issues.json()["items"]] == [
        (2, "open_issues_restored"),
        (3, "accepted"),
    ]
    upto = await history(audit_client, audit_data, section="Files & Context", to_archive=2)
    assert [i["archive_seq"] for i in upto.json()["items"]] == [1, 2]
    beyond = await history(audit_client, audit_data, from_archive=4)
    assert beyond.status_code == 200
    assert beyond.json()["items"] == []


async def test_a_range_pages_by_archive_and_position(
    audit_client: httpx.AsyncClient, audit_data: AuditData
) -> None:
    rows: list[tuple[int, int]] = []
    params: dict[str, Any] = {"from_archive": 2, "to_archive": 3, "limit": 4}
    while True:
        body = (await history(audit_client, audit_data, **params)).json()
        rows += [(item["archive_seq"], item["position"]) for item in body["items"]]
        if body["next_after_archive_seq"] is None:
            break
        params["after_archive_seq"] = body["next_after_archive_seq"]
        params["after_position"] = body["next_after_position"]
    assert rows == [(archive, position) for archive in (2, 3) for position in range(1, 8)]


async def test_a_reversed_or_malformed_range_is_refused(
    audit_client: httpx.AsyncClient, audit_data: AuditData
) -> None:
    reversed_ = await history(audit_client, audit_data, from_archive=3, to_archive=2)
    assert reversed_.status_code == 422
    assert reversed_.headers["content-type"].startswith("application/problem+json")
    assert reversed_.json()["errors"][0]["loc"] == ["query", "to_archive"]
    for bad in ({"from_archive": 0}, {"to_archive": -1}, {"from_archive": "x"}):
        assert (await history(audit_client, audit_data, **bad)).status_code == 422


async def test_another_tenant_or_another_user_sees_no_history(
    audit_client: httpx.AsyncClient,
    audit_data: AuditData,
    audit_database: tuple[str, Database],
) -> None:
    other = await history(audit_client, audit_data, key=audit_data.other.reader, from_archive=1)
    assert other.status_code == 404
    _, database = audit_database
    async with database.unscoped() as db:
        _, bound = await tenancy.issue_key(
            db, audit_data.tenant.tenant_id, role=Role.READER, user_id="someone-else"
        )
    # The agent session belongs to no user: a key bound to a user must not read its history.
    assert (await history(audit_client, audit_data, key=bound)).status_code == 404
