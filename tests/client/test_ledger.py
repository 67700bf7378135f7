"""The context ledger through the typed client: record a context, list and read it back."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import TenantKeys
from workmem_client import AsyncWorkmemClient, NotFoundError

Factory = Callable[..., AsyncWorkmemClient]


async def test_record_list_and_read_a_context(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session()
        await workmem.append(created.id, {"role": "user", "content": "The deadline is May 3."})
        plain = await workmem.context(created.id)
        assert plain.context_id is None
        assert (await workmem.contexts(created.id)).items == []
        first = await workmem.context(created.id, record=True)
        second = await workmem.compact(created.id, record=True)
        assert first.context_id is not None
        assert second.context_id is not None
        page = await workmem.contexts(created.id, limit=1)
        assert [item.context_id for item in page.items] == [second.context_id]
        assert page.next_cursor is not None
        rest = await workmem.contexts(created.id, cursor=page.next_cursor)
        assert [item.context_id for item in rest.items] == [first.context_id]
        assert rest.next_cursor is None
        read = await workmem.recorded_context(created.id, first.context_id)
        assert read.source == "context"
        assert read.tail.ranges == [[1, 1]]
        assert read.message_count == len(first.messages)
        other = await workmem.create_session()
        with pytest.raises(NotFoundError):
            await workmem.recorded_context(other.id, first.context_id)


async def test_an_agent_session_that_records_by_default(
    workmem_for: Factory, tenant: TenantKeys
) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session(record_contexts=True)
        assert created.record_contexts is True
        await workmem.append(created.id, {"role": "user", "content": "The deadline is May 3."})
        recorded = await workmem.context(created.id)
        assert recorded.context_id is not None
        assert (await workmem.context(created.id, record=False)).context_id is None
        turned = await workmem.set_record_contexts(created.id, False)
        assert turned.record_contexts is False
        assert (await workmem.context(created.id)).context_id is None
        page = await workmem.contexts(created.id)
        assert [item.context_id for item in page.items] == [recorded.context_id]
