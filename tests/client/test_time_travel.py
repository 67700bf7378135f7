"""The client's calls for going back in time: restoring an earlier working memory, forking."""

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


async def test_fork(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        parent = await workmem.create_session(user_id="ana")
        for text in ("Decision: use Postgres.", "Error: the importer crashed.", "Next: ship."):
            await workmem.append(parent.id, {"role": "user", "content": text})
            await workmem.commit(parent.id, keep_recent_count=0, wait=True)
        fork = await workmem.fork(parent.id, at_archive=2)
        assert fork.lineage is not None
        assert (fork.lineage.parent_session_id, fork.lineage.archive_seq, fork.lineage.seq) == (
            parent.id,
            2,
            2,
        )
        assert (fork.user_id, fork.message_count, fork.archive_count) == ("ana", 2, 2)
        by_seq = await workmem.fork(parent.id, at_seq=3)
        assert by_seq.lineage is not None
        assert (by_seq.lineage.archive_seq, by_seq.live_message_count) == (3, 0)
        assert (await workmem.get_session(parent.id)).lineage is None
        page = await workmem.messages(fork.id)
        assert [m.message["content"] for m in page.items] == [
            "Decision: use Postgres.",
            "Error: the importer crashed.",
        ]
        with pytest.raises(ValidationError):
            await workmem.fork(parent.id)
        with pytest.raises(ValidationError):
            await workmem.fork(parent.id, at_archive=1, at_seq=1)
        with pytest.raises(NotFoundError):
            await workmem.fork(parent.id, at_archive=9)
        with pytest.raises(ConflictError):
            await workmem.delete_session(parent.id)
