"""The identifiers OpenViking clients see, and how each maps to ours. Pure: no I/O.

A session id is the agent session's ``external_id``; an archive id is ``archive_`` plus the
archive's seq (zero-padded to three digits); a task id encodes the agent session and the archive
seq, so no table is needed to resolve it; a message id encodes the message's seq.
"""

from __future__ import annotations

import re
import uuid
from typing import Final
from urllib.parse import quote

SESSION_ID_MAX_LENGTH: Final = 255
SESSION_ID_PATTERN: Final = r"^(?:[A-Za-z0-9_.@-]*[A-Za-z0-9_@-][A-Za-z0-9_.@-]*|\.{3,})$"
"""OpenViking accepted any text (``a/b`` too); we accept what is safe in a path and a URI: up to
``SESSION_ID_MAX_LENGTH`` of these characters, but not ``.`` or ``..``, which a client that
normalises its URLs turns into another path (no lookahead: the pattern is a JSON Schema's)."""
ARCHIVE_SEQ_MAX: Final = 2**31 - 1

_ARCHIVE_ID = re.compile(r"^archive_([0-9]{1,10})$")
_TASK_ID = re.compile(r"^commit-([0-9a-f]{32})-([1-9][0-9]{0,9})$")
_SESSION_ID = re.compile(SESSION_ID_PATTERN)


def is_session_id(value: str) -> bool:
    return len(value) <= SESSION_ID_MAX_LENGTH and _SESSION_ID.fullmatch(value) is not None


def new_session_id() -> str:
    """The id of a session created without one (OpenViking generated one too)."""
    return str(uuid.uuid4())


def archive_id(archive_seq: int) -> str:
    return f"archive_{archive_seq:03d}"


def parse_archive_id(value: str) -> int | None:
    """The archive seq an ``archive_NNN`` id names; ``None`` for anything else."""
    match = _ARCHIVE_ID.fullmatch(value)
    if match is None:
        return None
    archive_seq = int(match.group(1))
    return archive_seq if 1 <= archive_seq <= ARCHIVE_SEQ_MAX else None


def task_id(agent_session_id: uuid.UUID, archive_seq: int) -> str:
    """The task of a commit is its archive: the id says which one, and is stable."""
    return f"commit-{agent_session_id.hex}-{archive_seq}"


def parse_task_id(value: str) -> tuple[uuid.UUID, int] | None:
    match = _TASK_ID.fullmatch(value)
    if match is None:
        return None
    archive_seq = int(match.group(2))
    if archive_seq > ARCHIVE_SEQ_MAX:
        return None
    return uuid.UUID(hex=match.group(1)), archive_seq


def message_id(seq: int) -> str:
    """``msg_`` and 32 hex digits, as OpenViking's ids look; the digits are the message's seq."""
    return f"msg_{seq:032x}"


def session_uri(session_id: str) -> str:
    """OpenViking's ``viking://session/{id}`` form. Quoted, as an ``external_id`` given through
    ``/v1`` may hold characters a session id here cannot (a valid id is left as it is)."""
    return f"viking://session/{quote(session_id, safe='@')}"


def archive_uri(session_id: str, archive_seq: int) -> str:
    return f"{session_uri(session_id)}/history/{archive_id(archive_seq)}"
