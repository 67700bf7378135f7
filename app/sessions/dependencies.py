"""Request dependencies of the sessions feature: the process's append flow."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.sessions.appending import AppendFlow
from app.web.state import Slot

APPEND_FLOW = Slot[AppendFlow]("append_flow")
"""Built once by the lifespan in ``main``; every door that appends runs it."""

AppendFlowDep = Annotated[AppendFlow, Depends(APPEND_FLOW.read)]
