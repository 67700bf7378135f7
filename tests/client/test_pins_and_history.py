"""Pins and history search (DESIGN 13, 18) through the typed client."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import TenantKeys
from workmem_client import AsyncWorkmemClient, ValidationError

Factory = Callable[..., AsyncWorkmemClient]


async def test_pin_and_unpin(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session()
        await workmem.append(created.id, {"role": "user", "content": "The deadline is May 3."})
        pinned = await workmem.pin(created.id, text="Ship to the Lyon warehouse only.")
        assert pinned.text == "Ship to the Lyon warehouse only."
        assert pinned.message_seq is None
        by_seq = await workmem.pin(created.id, message_seq=1, section="Key Facts & Decisions")
        assert (by_seq.message_seq, by_seq.text) == (1, "The deadline is May 3.")
        listed = await workmem.pins(created.id)
        assert [pin.pin_id for pin in listed.items] == [pinned.pin_id, by_seq.pin_id]
        assert listed.tokens == pinned.token_count + by_seq.token_count <= listed.max_tokens
        await workmem.unpin(created.id, pinned.pin_id)
        assert [pin.pin_id for pin in (await workmem.pins(created.id)).items] == [by_seq.pin_id]


async def test_a_pin_needs_a_text_or_a_seq(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session()
        with pytest.raises(ValidationError):
            await workmem.pin(created.id)
        assert (await workmem.pins(created.id)).items == []


async def test_search_history(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem:
        created = await workmem.create_session()
        await workmem.append_batch(
            created.id,
            [
                {"role": "user", "content": "The flamingo migration runs on Tuesdays."},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "And the flamingo backups on Fridays."},
            ],
        )
        await workmem.commit(created.id, keep_recent_count=1, wait=True)
        found = await workmem.search_history(created.id, "flamingo")
        assert sorted(hit.seq for hit in found.items) == [1, 3]
        by_seq = {hit.seq: hit for hit in found.items}
        assert (by_seq[1].archive_seq, by_seq[3].archive_seq) == (1, None)
        assert "flamingo" in by_seq[1].snippet.lower()
        later = await workmem.search_history(created.id, "flamingo", from_seq=2)
        assert [hit.seq for hit in later.items] == [3]
