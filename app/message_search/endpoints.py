"""HTTP route of history search (``GET /v1/sessions/{id}/history/search``)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from app.deps import DatabaseDep
from app.errors import InvalidInput
from app.message_search.query import MAX_QUERY_CHARS
from app.message_search.schemas import HistorySearchRead
from app.message_search.service import HistoryService
from app.tenancy.auth import Reader
from app.validation import SEQ_MAX, find_unstorable
from app.web.problems import TENANT_ROUTE, problems
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/v1/sessions",
    tags=["history"],
    route_class=StrictJsonRoute,
    responses=problems(*TENANT_ROUTE),
)


@router.get("/{agent_session_id}/history/search", responses=problems(404, 422))
async def search_history(
    agent_session_id: uuid.UUID,
    principal: Reader,
    database: DatabaseDep,
    q: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_QUERY_CHARS,
            description='words to find, web-search syntax: "a phrase", or, -word; paths and '
            "dotted names are found as written (app/models/user.py, user.py)",
        ),
    ],
    limit: Annotated[int, Query(ge=1, le=50)] = 10,
    from_seq: Annotated[
        int | None, Query(ge=1, le=SEQ_MAX, description="first seq searched")
    ] = None,
    to_seq: Annotated[int | None, Query(ge=1, le=SEQ_MAX, description="last seq searched")] = None,
) -> HistorySearchRead:
    """Ranked full-text search over the agent session's raw messages, archived ones included;
    ranking is among the newest 100 matches of the seq range, and a query of exclusions only
    (``-draft``) finds nothing."""
    if find_unstorable(q) is not None:
        message = "q contains a NUL character or an unpaired surrogate"
        raise InvalidInput(message, errors=[{"loc": ["query", "q"], "msg": message}])
    async with database.tenant(principal.tenant_id) as db:
        result = await HistoryService(db, principal).search(
            agent_session_id, q, from_seq=from_seq, to_seq=to_seq, limit=limit
        )
    return HistorySearchRead.from_result(q, result)
