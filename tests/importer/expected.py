"""What a workspace holds, counted straight from its files by the rules of the format's README.

Independent of the importer: no code of ``app.importer`` is used, the overview kind is decided
by the seven exact header lines (the README's rule, not the importer's parser), and status by
the ``.done`` / ``.failed.json`` markers.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADERS = (
    "## Session Title",
    "## Current State",
    "## Task & Goals",
    "## Key Facts & Decisions",
    "## Files & Context",
    "## Errors & Corrections",
    "## Open Issues",
)


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def overview_kind(archive: Path) -> str:
    path = archive / ".overview.md"
    if not path.is_file() or not path.read_text().strip():
        return "none"
    present = set(path.read_text().splitlines())
    return "v2" if all(header in present for header in HEADERS) else "legacy"


def status(archive: Path) -> str:
    if (archive / ".done").exists():
        return "done"
    return "failed" if (archive / ".failed.json").exists() else "pending"


@dataclass
class SessionFiles:
    account: str
    user: str
    session_id: str
    live: list[dict[str, Any]]
    archives: list[tuple[str, str, str, list[dict[str, Any]]]]
    """(folder name, status, overview kind, messages), by archive number."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for *_, messages in self.archives for m in messages] + self.live

    @property
    def tool_parts(self) -> list[dict[str, Any]]:
        return [part for m in self.messages for part in m["parts"] if part["type"] == "tool"]


@dataclass
class WorkspaceFiles:
    sessions: list[SessionFiles] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, Any]:
        archives = [a for s in self.sessions for a in s.archives]
        statuses = Counter(a[1] for a in archives)
        kinds = Counter(a[2] for a in archives)
        return {
            "agent_sessions": len(self.sessions),
            "messages": sum(len(s.messages) for s in self.sessions),
            "live_messages": sum(len(s.live) for s in self.sessions),
            "archived_messages": sum(len(a[3]) for a in archives),
            "archives": {key: statuses[key] for key in ("done", "failed", "pending")},
            "working_memory": {key: kinds[key] for key in ("v2", "legacy", "none")},
            "tool_parts": sum(len(s.tool_parts) for s in self.sessions),
        }


def read_workspace(workspace: Path) -> WorkspaceFiles:
    found = WorkspaceFiles()
    for session in sorted((workspace / "viking").glob("*/user/*/sessions/*/")):
        account, _, user, _, session_id = session.relative_to(workspace / "viking").parts
        archives = sorted(
            (int(m.group(1)), folder)
            for folder in (session / "history").glob("archive_*")
            if (m := re.fullmatch(r"archive_(\d+)", folder.name))
        )
        found.sessions.append(
            SessionFiles(
                account,
                user,
                session_id,
                lines(session / "messages.jsonl"),
                [
                    (f.name, status(f), overview_kind(f), lines(f / "messages.jsonl"))
                    for _, f in archives
                ],
            )
        )
    return found
