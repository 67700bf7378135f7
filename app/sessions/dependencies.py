"""Request dependencies of the sessions feature: the process's append flow."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.sessions.appending import AppendFlow


async def get_append_flow(request: Request) -> AppendFlow:
    """The append flow built once by the lifespan in ``main``."""
    found: AppendFlow = request.app.state.append_flow
    return found


AppendFlowDep = Annotated[AppendFlow, Depends(get_append_flow)]
