"""HTTP route of the working-memory section history
(``GET /v1/sessions/{id}/working-memory/history``): every version of the seven sections, archive
by archive, for the API beside the ``/ui`` pages that show the same history.

Owns the parameters and the transaction of a request; the page comes from ``ArchiveService``
and is mapped to its body by the archives' presenter.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from app.archives.presenter import section_history_page
from app.archives.schemas import SectionHistoryPage
from app.archives.service import ArchiveService
from app.deps import DatabaseDep
from app.errors import InvalidInput
from app.tenancy.auth import Reader
from app.web.problems import TENANT_ROUTE, problems
from app.web.requests import StrictJsonRoute
from app.wm.sections import section_for

router = APIRouter(
    prefix="/v1/sessions",
    tags=["archives"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)

INT32_MAX = 2**31 - 1

SectionName = Annotated[str | None, Query(description="one of the seven section headers")]


@router.get("/{agent_session_id}/working-memory/history", responses=problems(404, 422))
async def working_memory_history(
    agent_session_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    section: SectionName = None,
    after_archive_seq: Annotated[int, Query(ge=0, le=INT32_MAX)] = 0,
    after_position: Annotated[
        int,
        Query(
            ge=1,
            le=7,
            description="with after_archive_seq: start after this section of that archive "
            "(default 7: after the whole archive)",
        ),
    ] = 7,
    limit: Annotated[int, Query(ge=1, le=700)] = 70,
    from_archive: Annotated[
        int | None, Query(ge=1, le=INT32_MAX, description="only archives from this one on")
    ] = None,
    to_archive: Annotated[
        int | None, Query(ge=1, le=INT32_MAX, description="only archives up to this one")
    ] = None,
) -> SectionHistoryPage:
    if from_archive is not None and to_archive is not None and from_archive > to_archive:
        raise InvalidInput(
            f"from_archive {from_archive} is after to_archive {to_archive}",
            errors=[{"loc": ["query", "to_archive"], "msg": "must not be below from_archive"}],
        )
    chosen = None
    if section is not None:
        chosen = section_for(section)
        if chosen is None or chosen.value != section:
            raise InvalidInput(
                f"unknown section {section!r}",
                errors=[{"loc": ["query", "section"], "msg": "not one of the seven sections"}],
            )
    async with database.tenant(principal.tenant_id) as db:
        page = await ArchiveService(db, principal).history(
            agent_session_id,
            section=chosen,
            after=(after_archive_seq, after_position),
            limit=limit,
            from_archive=from_archive,
            to_archive=to_archive,
        )
    return section_history_page(page)
