"""What one import run did, per session and in total: the figures of its table and its report.

Pure data, built from the sessions read and what happened to each; counts cover the sessions
this run imported (or, in a dry run, would import), so a re-run that finds nothing new counts
nothing and says so.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.importer.openviking.records import (
    OverviewKind,
    OvSession,
    Problem,
    stored_count,
)


class SessionStatus(StrEnum):
    IMPORTED = "imported"
    WOULD_IMPORT = "would_import"
    ALREADY_IMPORTED = "already_imported"
    CHANGED_SINCE_IMPORT = "changed_since_import"
    EXTERNAL_ID_TAKEN = "external_id_taken"
    FAILED = "failed"

    @property
    def counted(self) -> bool:
        return self in (SessionStatus.IMPORTED, SessionStatus.WOULD_IMPORT)


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    session: OvSession
    status: SessionStatus
    problems: tuple[Problem, ...]
    agent_session_id: uuid.UUID | None = None
    pending_tokens: int | None = None
    reason: Problem | None = None
    """Why the session was not imported (also among ``problems``)."""

    def as_json(self) -> dict[str, Any]:
        session = self.session
        return {
            "account": session.ref.account,
            "user": session.ref.user,
            "session_id": session.ref.session_id,
            "path": session.ref.path,
            "status": self.status.value,
            "agent_session_id": None
            if self.agent_session_id is None
            else str(self.agent_session_id),
            "messages": len(session.messages),
            "stored_messages": stored_count(session.messages),
            "archives": [
                {
                    "archive": archive.name,
                    "status": archive.status.value,
                    "messages": len(archive.messages),
                    "working_memory": archive.overview.kind.value,
                }
                for archive in session.archives
            ],
            "tool_parts": session.tool_parts,
            "pending_tokens": {
                "openviking": session.pending_tokens,
                "workmem": self.pending_tokens,
            },
        }


@dataclass(frozen=True, slots=True)
class Summary:
    workspace: str
    tenant_id: uuid.UUID
    dry_run: bool
    outcomes: tuple[SessionOutcome, ...]
    discovery_problems: tuple[Problem, ...] = ()

    @property
    def counted(self) -> list[OvSession]:
        return [outcome.session for outcome in self.outcomes if outcome.status.counted]

    @property
    def statuses(self) -> Counter[SessionStatus]:
        return Counter(outcome.status for outcome in self.outcomes)

    @property
    def problems(self) -> list[Problem]:
        """Problems of the sessions this run imported or could not, and of the search; a
        session left as it was imported before is not read out again."""
        found = list(self.discovery_problems)
        for outcome in self.outcomes:
            if outcome.status is not SessionStatus.ALREADY_IMPORTED:
                found += outcome.problems
        return found

    @property
    def failed(self) -> bool:
        return self.statuses[SessionStatus.FAILED] > 0

    def figures(self) -> dict[str, Any]:
        sessions = self.counted
        archives = [archive for session in sessions for archive in session.archives]
        statuses = self.statuses
        archive_statuses = Counter(archive.status.value for archive in archives)
        overviews = Counter(archive.overview.kind.value for archive in archives)
        return {
            "agent_sessions": {
                "found": len(self.outcomes),
                "imported": statuses[SessionStatus.IMPORTED] + statuses[SessionStatus.WOULD_IMPORT],
                **{
                    status.value: statuses[status]
                    for status in (
                        SessionStatus.ALREADY_IMPORTED,
                        SessionStatus.CHANGED_SINCE_IMPORT,
                        SessionStatus.EXTERNAL_ID_TAKEN,
                        SessionStatus.FAILED,
                    )
                },
            },
            "messages": {
                "openviking": sum(len(session.messages) for session in sessions),
                "stored": sum(stored_count(session.messages) for session in sessions),
            },
            "archives": {
                status: archive_statuses[status] for status in ("done", "failed", "pending")
            },
            "working_memory": {kind.value: overviews[kind.value] for kind in OverviewKind},
            "tool_parts": sum(session.tool_parts for session in sessions),
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "tenant_id": str(self.tenant_id),
            "dry_run": self.dry_run,
            **self.figures(),
            "problems": [problem.as_json() for problem in self.problems],
            "sessions": [outcome.as_json() for outcome in self.outcomes],
        }
