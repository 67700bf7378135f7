"""Inputs the fuzzer found answering 500 or off-envelope under ``/api/v1``: each is OpenViking's
envelope with a client error now, and stores nothing."""

from __future__ import annotations

import httpx
import pytest

from tests.compat.helpers import API, failed
from tests.conftest import TenantKeys


@pytest.mark.parametrize(
    "moment",
    ["0477-05-08T21:09:35+21:35", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"],
)
async def test_a_created_at_postgres_cannot_hold(
    client: httpx.AsyncClient, tenant: TenantKeys, moment: str
) -> None:
    response = await client.post(
        f"{API}/sessions/hostile-time/messages",
        json={"role": "user", "content": "x", "created_at": moment},
        headers=tenant.write,
    )
    failed(response, "INVALID_ARGUMENT", 400)
    failed(await client.get(f"{API}/sessions/hostile-time", headers=tenant.read), "NOT_FOUND", 404)


async def test_a_newline_in_a_session_id_is_still_the_envelope(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    response = await client.post(
        f"{API}/sessions/a%0Ab/messages/batch",
        json={"messages": [{"role": "user", "content": "x"}]},
        headers=tenant.write,
    )
    failed(response, "NOT_FOUND", 404)
