"""A tenant's retention policy through the typed client."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import TenantKeys
from workmem_client import AsyncWorkmemClient, ForbiddenError, ValidationError

Factory = Callable[..., AsyncWorkmemClient]


async def test_an_admin_sets_and_reads_the_policy(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.admin) as workmem:
        assert (await workmem.retention()).archive_messages_days is None
        stored = await workmem.set_retention(archive_messages_days=30, memory_days={"event": 7})
        assert (stored.archive_messages_days, stored.idle_session_days) == (30, None)
        assert stored.memory_days == {"event": 7}
        assert await workmem.retention() == stored
        with pytest.raises(ValidationError):
            await workmem.set_retention(idle_session_days=0)
        assert await workmem.retention() == stored


async def test_a_writer_may_not(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        with pytest.raises(ForbiddenError):
            await workmem.set_retention(idle_session_days=30)
        with pytest.raises(ForbiddenError):
            await workmem.retention()
