"""An import run: find the sessions, then read and store each in a transaction of its own.

An edge like the worker: it owns its transactions, one per session (look up, then store), so an
interrupted run keeps every session it finished and the next run skips them. A session whose
``external_id`` already exists is never touched: it is already imported (same files), changed
since (reported), or belongs to another agent session (reported). A dry run reads, converts and
validates everything and looks up what exists, but writes nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError
from sqlalchemy import exc as sa_exc

from app.db import Database
from app.db_errors import is_unavailable
from app.errors import AppError, NotFound, Unavailable
from app.importer.openviking.reader import find_sessions, read_session
from app.importer.openviking.records import OvSession, Problem, ProblemKind
from app.importer.openviking.summary import SessionOutcome, SessionStatus, Summary
from app.importer.openviking.writer import OpenVikingWriter
from app.sessions.service import Limits
from app.tenancy import service as tenancy


@dataclass(frozen=True, slots=True)
class ImportOptions:
    directory: Path
    tenant_id: uuid.UUID
    account: str | None = None
    user: str | None = None
    dry_run: bool = False


class Listener(Protocol):
    """Told how many sessions there are, then each outcome as it happens (the progress)."""

    def started(self, total: int) -> None: ...

    def finished(self, outcome: SessionOutcome) -> None: ...


async def import_workspace(
    database: Database, options: ImportOptions, limits: Limits, listener: Listener
) -> Summary:
    """Import every session found; raises ``NotAWorkspace`` or ``NotFound`` (no such tenant)
    before anything is written."""
    refs, discovery_problems = find_sessions(
        options.directory, account=options.account, user=options.user
    )
    async with database.unscoped() as db:
        if not await tenancy.tenant_exists(db, options.tenant_id):
            raise NotFound(f"tenant {options.tenant_id} does not exist")
    listener.started(len(refs))
    outcomes = []
    for ref in refs:
        session = read_session(
            ref, base=options.directory, max_message_bytes=limits.max_message_bytes
        )
        outcome = await _import_one(database, options, limits, session)
        outcomes.append(outcome)
        listener.finished(outcome)
    return Summary(
        str(options.directory),
        options.tenant_id,
        options.dry_run,
        tuple(outcomes),
        tuple(discovery_problems),
    )


async def _import_one(
    database: Database, options: ImportOptions, limits: Limits, session: OvSession
) -> SessionOutcome:
    problems = session.problems
    try:
        async with database.tenant(options.tenant_id) as db:
            writer = OpenVikingWriter(db, options.tenant_id, limits)
            existing = await writer.existing(session)
            if existing is not None:
                return _existing_outcome(session, existing.agent_session_id, existing.fingerprint)
            fatal = session.fatal
            if fatal is not None:
                return SessionOutcome(session, SessionStatus.FAILED, problems, reason=fatal)
            if options.dry_run:
                return SessionOutcome(session, SessionStatus.WOULD_IMPORT, problems)
            stored = await writer.store(session)
    except Unavailable:
        raise
    except (AppError, ValidationError, sa_exc.DBAPIError) as error:
        if isinstance(error, sa_exc.DBAPIError) and is_unavailable(error):
            raise
        refused = Problem(session.ref.path, None, ProblemKind.IMPORT_REFUSED, _first_line(error))
        return SessionOutcome(session, SessionStatus.FAILED, (*problems, refused), reason=refused)
    return SessionOutcome(
        session,
        SessionStatus.IMPORTED,
        (*problems, *stored.problems),
        agent_session_id=stored.agent_session_id,
        pending_tokens=stored.pending_tokens,
    )


def _existing_outcome(
    session: OvSession, agent_session_id: uuid.UUID, fingerprint: str | None
) -> SessionOutcome:
    path = session.ref.path
    if fingerprint == session.fingerprint or fingerprint in session.same_files:
        return SessionOutcome(
            session, SessionStatus.ALREADY_IMPORTED, (), agent_session_id=agent_session_id
        )
    if fingerprint is None:
        taken = Problem(
            path,
            None,
            ProblemKind.EXTERNAL_ID_TAKEN,
            f"agent session {agent_session_id} already has external_id "
            f"{session.ref.session_id!r} and was not imported from this folder; not imported",
        )
        return SessionOutcome(
            session,
            SessionStatus.EXTERNAL_ID_TAKEN,
            (taken,),
            agent_session_id=agent_session_id,
            reason=taken,
        )
    changed = Problem(
        path,
        None,
        ProblemKind.CHANGED_SINCE_IMPORT,
        f"the files differ from those agent session {agent_session_id} was imported from "
        "(OpenViking kept working on it, or they were edited); the agent session is left as it "
        "is with everything that continued in it, and nothing in it is removed or replaced. "
        "To have both, import the workspace into another tenant (--tenant)",
    )
    return SessionOutcome(
        session,
        SessionStatus.CHANGED_SINCE_IMPORT,
        (changed,),
        agent_session_id=agent_session_id,
        reason=changed,
    )


def _first_line(error: Exception) -> str:
    if isinstance(error, AppError):
        return error.detail
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(str(part) for part in first['loc'])}: {first['msg']}"
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
