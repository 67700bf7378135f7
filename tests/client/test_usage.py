"""The model usage report through the typed client."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from app.db import Database
from app.usage.recorder import UsageRecorder
from app.usage.records import CallScope, ModelCallRecord
from tests.conftest import TenantKeys
from workmem_client import AsyncWorkmemClient, ForbiddenError, ValidationError

Factory = Callable[..., AsyncWorkmemClient]


async def test_model_usage_by_day_and_model(
    workmem_for: Factory, tenant: TenantKeys, database: Database
) -> None:
    recorder = UsageRecorder(database)
    now = datetime.now(UTC)
    recorder.record(
        ModelCallRecord(
            scope=CallScope(tenant.tenant_id),
            purpose="wm_create",
            model="gpt-client",
            input_tokens=321,
            output_tokens=12,
            latency_ms=40,
            outcome="ok",
            at=now,
        )
    )
    await recorder.close()
    async with workmem_for(tenant.admin) as workmem:
        report = await workmem.model_usage()
        assert [(item.model, item.input_tokens, item.output_tokens) for item in report.items] == [
            ("gpt-client", 321, 12)
        ]
        assert report.to == now.date().isoformat()
        earlier = now.date() - timedelta(days=3)
        assert (await workmem.model_usage(since=earlier, until=earlier)).items == []
        with pytest.raises(ValidationError):
            await workmem.model_usage(since=now.date(), until=earlier)
    async with workmem_for(tenant.writer) as workmem:
        with pytest.raises(ForbiddenError):
            await workmem.model_usage()
