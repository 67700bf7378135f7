"""What the reader makes of an OpenViking workspace: sessions, archives, messages, problems.

Pure data, each value as it was on disk (counts in OpenViking's units: one message per line),
with its messages already in OpenAI format. Never reads files or touches the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from app.models import ArchiveStatus
from app.sessions.schemas import MessageCreate
from app.wm.sections import ParsedDocument


class ProblemKind(StrEnum):
    """Stable codes of what an import reports (``docs/import.md`` says what each one does)."""

    INVALID_JSON = "invalid_json"
    INVALID_MESSAGE = "invalid_message"
    DUPLICATE_MESSAGE = "duplicate_message"
    UNKNOWN_PART = "unknown_part"
    INVALID_PART = "invalid_part"
    UNSTORABLE_TEXT = "unstorable_text"
    INVALID_TIME = "invalid_time"
    MISSING_META = "missing_meta"
    META_MISMATCH = "meta_mismatch"
    EMPTY_ARCHIVE = "empty_archive"
    OVERVIEW_MISSING = "overview_missing"
    TOOL_OUTPUT_MISSING = "tool_output_missing"
    MESSAGE_TOO_LARGE = "message_too_large"
    NOT_A_SESSION = "not_a_session"
    CHANGED_SINCE_IMPORT = "changed_since_import"
    EXTERNAL_ID_TAKEN = "external_id_taken"
    PENDING_TOKENS_MISMATCH = "pending_tokens_mismatch"
    IMPORT_REFUSED = "import_refused"


FATAL: frozenset[ProblemKind] = frozenset({ProblemKind.MESSAGE_TOO_LARGE})
"""Problems that keep a whole session out: importing it without the message would lose it."""


@dataclass(frozen=True, slots=True)
class Problem:
    """Something in the files that was skipped, repaired or is worth knowing; ``path`` is
    relative to the workspace directory, ``line`` counts from 1 in JSONL files."""

    path: str
    line: int | None
    kind: ProblemKind
    detail: str

    @property
    def where(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "kind": self.kind.value,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class OvMessage:
    """One line of a ``messages.jsonl``: its OpenViking id and the OpenAI messages it became
    (several when it holds tool parts: each is a call plus its result)."""

    message_id: str
    line: int
    messages: tuple[MessageCreate, ...]
    tool_parts: int


def stored_count(messages: Sequence[OvMessage]) -> int:
    """How many workmem messages these OpenViking messages become."""
    return sum(len(message.messages) for message in messages)


def keep_window(keep: int, messages: Sequence[OvMessage]) -> int:
    """The workmem ``keep_recent_count`` for OpenViking's: the newest ``keep`` of ``messages``
    counted in workmem messages (a tool part is two there, one here)."""
    if keep <= 0:
        return 0
    return stored_count(messages[-keep:])


class OverviewKind(StrEnum):
    V2 = "v2"
    LEGACY = "legacy"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Overview:
    """An archive's ``.overview.md`` without its front matter: a working memory with the seven
    sections (``document``), free text from an older version, or nothing."""

    kind: OverviewKind
    text: str = ""
    document: ParsedDocument | None = None


NO_OVERVIEW = Overview(OverviewKind.NONE)


@dataclass(frozen=True, slots=True)
class OvArchive:
    """One ``history/archive_NNN`` folder. ``retained`` is how many messages its commit kept
    live (they follow it: in the next archive or the live file)."""

    name: str
    index: int
    path: str
    status: ArchiveStatus
    messages: tuple[OvMessage, ...]
    overview: Overview
    keep_recent_count: int | None
    retained: int
    created_at: datetime | None
    finished_at: datetime | None
    error_stage: str | None = None
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class SessionRef:
    """Where a session lives: account and user come only from the path."""

    account: str
    user: str
    session_id: str
    directory: Path
    path: str

    @property
    def label(self) -> str:
        return f"{self.account}/{self.user}/{self.session_id}"


@dataclass(frozen=True, slots=True)
class OvSession:
    """One session folder as read: archives in index order, then the live messages.

    ``fingerprint`` is a digest of every file the import reads (each named from the workspace's
    ``viking`` folder), so a later run can tell an unchanged session from one that grew since it
    was imported, whichever of the two folders either run named; ``same_files`` also holds the
    digest as earlier releases stored it after naming the workspace folder (files named from it).
    """

    ref: SessionRef
    meta: Mapping[str, Any] | None
    archives: tuple[OvArchive, ...]
    live: tuple[OvMessage, ...]
    created_at: datetime | None
    keep_recent_count: int | None
    pending_tokens: int | None
    fingerprint: str
    problems: tuple[Problem, ...]
    same_files: frozenset[str] = frozenset()

    @property
    def messages(self) -> tuple[OvMessage, ...]:
        """Every message in the order it is stored: archive by archive, then the live ones."""
        return (*(m for archive in self.archives for m in archive.messages), *self.live)

    @property
    def tool_parts(self) -> int:
        return sum(message.tool_parts for message in self.messages)

    @property
    def fatal(self) -> Problem | None:
        return next((p for p in self.problems if p.kind in FATAL), None)
