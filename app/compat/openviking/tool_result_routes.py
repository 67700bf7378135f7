"""HTTP routes of OpenViking's tool results: list a session's, read one by character range,
search inside one.

A tool result is the stored ``tool`` message that answers a call; its id is the call's id. A
session or result this credential cannot see is ``NOT_FOUND``, as one that does not exist. Never
imports a repository or the database.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.compat.openviking import tool_results as tr
from app.compat.openviking.endpoints import SessionPath
from app.compat.openviking.envelope import ERROR_RESPONSES, Envelope, ResourceNotFound
from app.deps import DatabaseDep
from app.errors import NotFound
from app.sessions.records import ToolResult
from app.sessions.service import AgentSessionService
from app.tenancy.auth import Reader
from app.tenancy.principal import Principal
from app.web.requests import StrictJsonRoute

router = APIRouter(
    prefix="/sessions", tags=["sessions"], responses=ERROR_RESPONSES, route_class=StrictJsonRoute
)

ToolResultPath = Annotated[
    str,
    Path(
        min_length=1,
        max_length=tr.TOOL_RESULT_ID_MAX_LENGTH,
        description="the tool result's id: the id of the tool call it answers",
    ),
]


async def _session(service: AgentSessionService, session_id: str) -> uuid.UUID:
    try:
        return (await service.get_by_external_id(session_id)).agent_session_id
    except NotFound as error:
        raise ResourceNotFound("session", session_id) from error


async def _one(
    database: DatabaseDep, principal: Principal, session_id: str, tool_result_id: str
) -> ToolResult:
    async with database.tenant(principal.tenant_id) as db:
        service = AgentSessionService(db, principal)
        agent_session_id = await _session(service, session_id)
        try:
            return await service.tool_result(agent_session_id, tool_result_id)
        except NotFound as error:
            raise ResourceNotFound("tool result", tool_result_id) from error


@router.get("/{session_id}/tool-results")
async def list_tool_results(
    session_id: SessionPath,
    principal: Reader,
    database: DatabaseDep,
    tool_name: Annotated[
        str | None, Query(max_length=256, description="only the results of this tool")
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=tr.LIST_LIMIT_MAX, description="the most results to list")
    ] = tr.LIST_LIMIT_DEFAULT,
) -> Envelope[tr.ToolResultList]:
    """The session's tool results, oldest first: each one's id, tool and length. Every
    tool result is kept whole in its message, so each one can be read and searched."""
    async with database.tenant(principal.tenant_id) as db:
        service = AgentSessionService(db, principal)
        results = await service.tool_results(await _session(service, session_id))
    chosen = tr.select(results, tool_name, limit)
    return Envelope(
        result=tr.ToolResultList(tool_results=[tr.listed(session_id, item) for item in chosen])
    )


@router.get("/{session_id}/tool-results/{tool_result_id}")
async def read_tool_result(
    session_id: SessionPath,
    tool_result_id: ToolResultPath,
    principal: Reader,
    database: DatabaseDep,
    offset: Annotated[int, Query(ge=0, description="the first character to read")] = 0,
    limit: Annotated[
        int,
        Query(
            ge=-1,
            le=tr.READ_LIMIT_MAX,
            description=f"the most characters to read, up to {tr.READ_LIMIT_MAX}; -1 to the end",
        ),
    ] = tr.READ_LIMIT_DEFAULT,
    include_metadata: Annotated[
        bool, Query(description="add the tool's name, the text's sha256 and where it is stored")
    ] = True,
) -> Envelope[tr.ToolResultPage]:
    """A page of one tool result's text by character range; read on from ``offset`` plus the
    length of ``content`` while ``has_more``."""
    result = await _one(database, principal, session_id, tool_result_id)
    return Envelope(
        result=tr.page(result, offset=offset, limit=limit, with_metadata=include_metadata)
    )


@router.get("/{session_id}/tool-results/{tool_result_id}/search")
async def search_tool_result(
    session_id: SessionPath,
    tool_result_id: ToolResultPath,
    principal: Reader,
    database: DatabaseDep,
    q: Annotated[
        str,
        Query(
            min_length=1,
            max_length=tr.QUERY_MAX_LENGTH,
            description="the text to find, ignoring case",
        ),
    ],
    limit: Annotated[
        int, Query(ge=1, le=tr.SEARCH_LIMIT_MAX, description="the most matches to give")
    ] = tr.SEARCH_LIMIT_DEFAULT,
    context_chars: Annotated[
        int,
        Query(ge=0, le=tr.CONTEXT_CHARS_MAX, description="characters either side of a match"),
    ] = tr.CONTEXT_CHARS_DEFAULT,
) -> Envelope[tr.ToolResultMatches]:
    """Where ``q`` occurs in one tool result, first to last: each match's offset, line and a
    snippet around it, to read further with the read route."""
    result = await _one(database, principal, session_id, tool_result_id)
    found = tr.search(result.text, q, limit=limit, context_chars=context_chars)
    return Envelope(
        result=tr.ToolResultMatches(
            tool_result_id=tool_result_id, query=q, matches=found.matches, has_more=found.has_more
        )
    )
