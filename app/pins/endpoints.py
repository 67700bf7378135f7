"""HTTP routes for pins (``/v1/sessions/{id}/pins``): writers pin and unpin, readers list."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Response, status

from app.deps import DatabaseDep, SettingsDep
from app.pins.presenter import pin_read
from app.pins.schemas import PinCreate, PinList, PinRead
from app.pins.service import PinService
from app.tenancy.auth import Reader, Writer
from app.web.problems import TENANT_ROUTE, WITH_BODY, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/sessions",
    tags=["pins"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)


@router.get("/{agent_session_id}/pins", responses=problems(404, 422))
async def list_pins(
    agent_session_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    settings: SettingsDep,
    include_unpinned: bool = False,
) -> PinList:
    """The agent session's pins in force, oldest first (``include_unpinned``: every pin ever
    made, unpinned ones with who unpinned them and when)."""
    async with database.tenant(principal.tenant_id) as db:
        service = PinService(db, principal, max_tokens=settings.pin_max_tokens)
        rows, tokens = await service.listed(agent_session_id, with_unpinned=include_unpinned)
        return PinList(
            items=[pin_read(row) for row in rows],
            tokens=tokens,
            max_tokens=settings.pin_max_tokens,
        )


@router.post(
    "/{agent_session_id}/pins",
    status_code=status.HTTP_201_CREATED,
    responses=problems(404, *WITH_BODY),
)
async def create_pin(
    agent_session_id: uuid.UUID,
    body: PinCreate,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
) -> PinRead:
    async with database.tenant(principal.tenant_id) as db:
        service = PinService(db, principal, max_tokens=settings.pin_max_tokens)
        return pin_read(await service.pin(agent_session_id, body))


@router.delete(
    "/{agent_session_id}/pins/{pin_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problems(404, 422),
)
async def delete_pin(
    agent_session_id: uuid.UUID,
    pin_id: uuid.UUID,
    principal: Writer,
    database: DatabaseDep,
    settings: SettingsDep,
) -> Response:
    """Unpin: the pin leaves every later context; its row and both events stay."""
    async with database.tenant(principal.tenant_id) as db:
        await PinService(db, principal, max_tokens=settings.pin_max_tokens).unpin(
            agent_session_id, pin_id
        )
    return Response(status_code=status.HTTP_204_NO_CONTENT)
