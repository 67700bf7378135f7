"""Redaction and erasure through the typed client: redact a pasted secret, erase a user, and
check the receipt against the tenant's public key."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest

from app.lifecycle import receipts
from tests.conftest import TenantKeys
from workmem_client import AsyncWorkmemClient, NotFoundError

Factory = Callable[..., AsyncWorkmemClient]


async def test_redact_then_erase_the_user(workmem_for: Factory, tenant: TenantKeys) -> None:
    async with workmem_for(tenant.writer) as workmem, workmem_for(tenant.admin) as admin:
        created = await workmem.create_session(user_id="frank/ü 1")
        await workmem.append(created.id, {"role": "user", "content": "my pin is 4321, sorry"})
        redacted = await workmem.redact(created.id, 1, reason="a pasted pin")
        assert (redacted.seq, redacted.already_redacted, redacted.reason) == (
            1,
            False,
            "a pasted pin",
        )
        again = await workmem.redact(created.id, 1)
        assert again.already_redacted
        listed = await workmem.messages(created.id)
        assert "4321" not in listed.model_dump_json()

        receipt = await admin.erase_user("frank/ü 1")
        assert receipt.removed["agent_sessions"] == 1
        assert receipt.removed["message_redactions"] == 1
        key = await workmem.receipt_public_key()
        assert key.algorithm == "Ed25519"
        receipts.verify(receipt.model_dump(), base64.b64decode(key.public_key))
        with pytest.raises(NotFoundError):
            await admin.erase_user("frank/ü 1")
        with pytest.raises(NotFoundError):
            await workmem.get_session(created.id)
