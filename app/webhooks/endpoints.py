"""HTTP routes of webhook subscriptions (``/v1/webhooks``), for tenant admin keys only.

Owns the parameters and the transactions of a request; a new destination is vetted (DNS
resolved, private addresses refused unless allowed) before the transaction opens.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.deps import DatabaseDep, SettingsDep
from app.errors import InvalidInput
from app.tenancy.auth import Admin
from app.web.problems import TENANT_ROUTE, WITH_BODY, problems
from app.web.requests import StrictJsonRoute
from app.webhooks.destinations import DestinationRefused, vet
from app.webhooks.presenter import delivery_read, webhook_created, webhook_read
from app.webhooks.schemas import DeliveryPage, WebhookCreate, WebhookCreated, WebhookPage
from app.webhooks.service import WebhookService

router = APIRouter(
    prefix="/v1/webhooks",
    tags=["webhooks"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)


@router.post("", status_code=status.HTTP_201_CREATED, responses=problems(409, *WITH_BODY))
async def create_webhook(
    body: WebhookCreate, principal: Admin, database: DatabaseDep, settings: SettingsDep
) -> WebhookCreated:
    """Subscribe an endpoint; the answer carries its signing secret, shown this once. A tenant
    holding ``WORKMEM_WEBHOOKS_MAX_SUBSCRIPTIONS`` subscriptions is answered 409."""
    try:
        await vet(body.url, allow_private=settings.webhooks_allow_private)
    except DestinationRefused as error:
        raise InvalidInput(
            str(error), errors=[{"loc": ["body", "url"], "msg": str(error)}]
        ) from None
    async with database.tenant(principal.tenant_id) as db:
        row = await WebhookService(db, principal).create(
            body, limit=settings.webhooks_max_subscriptions
        )
        return webhook_created(row)


@router.get("")
async def list_webhooks(principal: Admin, database: DatabaseDep) -> WebhookPage:
    async with database.tenant(principal.tenant_id) as db:
        rows = await WebhookService(db, principal).list()
    return WebhookPage(items=[webhook_read(row) for row in rows])


@router.delete(
    "/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT, responses=problems(404, 422)
)
async def delete_webhook(
    webhook_id: uuid.UUID, principal: Admin, database: DatabaseDep
) -> Response:
    """Unsubscribe; deliveries not yet made are dropped with it."""
    async with database.tenant(principal.tenant_id) as db:
        await WebhookService(db, principal).delete(webhook_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{webhook_id}/deliveries", responses=problems(404, 422))
async def webhook_deliveries(
    webhook_id: uuid.UUID,
    principal: Admin,
    database: DatabaseDep,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> DeliveryPage:
    """Deliveries, newest first, each with every attempt made (status code, error, timing)."""
    async with database.tenant(principal.tenant_id) as db:
        history = await WebhookService(db, principal).deliveries(
            webhook_id, cursor=cursor, limit=limit
        )
    return DeliveryPage(
        items=[delivery_read(row, attempts) for row, attempts in history.deliveries],
        next_cursor=history.next_cursor,
    )
