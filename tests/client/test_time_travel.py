"""The client's calls for going back in time: restoring an earlier working memory."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import TenantKeys
from workmem_client import AsyncWorkmemClient, ConflictError, NotFoundError, ValidationError

Factory = Callable[..., AsyncWorkmemClient]


async def test_restore_working_memory(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session()
        for text in ("Decision: use Postgres.", "Error: the importer crashed."):
            await workmem.append(created.id, {"role": "user", "content": text})
            assert (await workmem.commit(created.id, keep_recent_count=0, wait=True)).status == (
                "done"
            )
        first = await workmem.working_memory_history(created.id)
        restored = await workmem.restore_working_memory(created.id, 1)
        assert restored.archive_seq == 3
        assert restored.generator == "restore"
        assert {d.applied for d in restored.decisions} == {"RESTORE"}
        assert restored.sections == {
            v.section: v.content for v in first.items if v.archive_seq == 1
        }
        assert (await workmem.working_memory(created.id)).archive_seq == 3
        with pytest.raises(NotFoundError):
            await workmem.restore_working_memory(created.id, 9)
        with pytest.raises(ValidationError):
            await workmem.restore_working_memory(created.id, 0)
        await workmem.append(created.id, {"role": "user", "content": "more"})
        await workmem.commit(created.id, keep_recent_count=0)
        with pytest.raises(ConflictError):
            await workmem.restore_working_memory(created.id, 1)
