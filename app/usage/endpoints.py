"""HTTP route of the model usage report (``GET /v1/usage/models``), for tenant admin keys only.

A key bound to a user is refused: the report counts every user's calls.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import APIRouter, Query

from app.deps import DatabaseDep
from app.tenancy.auth import Admin
from app.usage.schemas import ModelUsageDay, ModelUsageReport, ModelUsageTotals
from app.usage.service import DayRange, Usage, UsageService, today
from app.web.problems import TENANT_ROUTE, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/usage",
    tags=["usage"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)


async def model_usage(
    principal: Admin,
    database: DatabaseDep,
    first: date | None,
    last: date | None,
) -> Usage:
    days = DayRange.of(first, last, today=today())
    async with database.tenant(principal.tenant_id) as db:
        return await UsageService(db, principal).by_day_and_model(days)


@router.get("/models", responses=problems(422))
async def usage_by_model(
    principal: Admin,
    database: DatabaseDep,
    first: Annotated[
        date | None, Query(alias="from", description="first UTC day (default: 29 days before to)")
    ] = None,
    last: Annotated[
        date | None, Query(alias="to", description="last UTC day (default: today)")
    ] = None,
) -> ModelUsageReport:
    """The tenant's model and embedding calls by UTC day and model: calls, failures, refusals,
    tokens in and out, mean latency. At most 366 days; ``from`` after ``to`` is a 422."""
    usage = await model_usage(principal, database, first, last)
    return report(usage)


def report(usage: Usage) -> ModelUsageReport:
    items = [
        ModelUsageDay(
            day=row.day,
            model=row.model,
            calls=row.calls,
            errors=row.errors,
            refused=row.refused,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            mean_latency_ms=round(row.latency_ms / row.calls) if row.calls else 0,
        )
        for row in usage.rows
    ]
    return ModelUsageReport.model_validate(
        {
            "from": usage.days.first,
            "to": usage.days.last,
            "items": items,
            "totals": ModelUsageTotals(
                calls=sum(item.calls for item in items),
                errors=sum(item.errors for item in items),
                refused=sum(item.refused for item in items),
                input_tokens=sum(item.input_tokens for item in items),
                output_tokens=sum(item.output_tokens for item in items),
            ),
        }
    )
