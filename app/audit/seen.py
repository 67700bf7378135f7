""" "What the model saw": a recorded context's rebuilt messages, each labelled with the part it
came from and a link to that part's page. Pure: a ledger row and its rendering in, the page's
values out; never reads anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.ledger.records import Rendering, expand_ranges
from app.models import AgentSession, ContextRecord


@dataclass(frozen=True, slots=True)
class SeenMessage:
    """One message the model received: ``kind`` is ``summary``, ``memories``, ``pinned``,
    ``filled`` or ``tail``; ``link`` the page of where it came from, when there is one."""

    kind: str
    label: str
    message: Mapping[str, Any]
    seq: int | None = None
    link: str | None = None
    cleared: bool = False
    redacted: bool = False


@dataclass(frozen=True, slots=True)
class Seen:
    agent_session: AgentSession
    record: ContextRecord
    rendering: Rendering
    messages: tuple[SeenMessage, ...]
    archive_of: Mapping[int, int]
    """The archive each listed archive's messages belong to, by seq (for links)."""


def _archive_of(record: ContextRecord) -> dict[int, int]:
    found: dict[int, int] = {}
    for archive_seq, start_seq, end_seq in record.hint.get("archives", ()):
        for seq in range(int(start_seq), int(end_seq) + 1):
            found.setdefault(seq, int(archive_seq))
    return found


def seen(agent_session: AgentSession, record: ContextRecord, rendering: Rendering) -> Seen:
    """The rebuilt messages of ``record`` with the part each came from, in the order sent."""
    base = f"/ui/sessions/{agent_session.agent_session_id}"
    archive_of = _archive_of(record)
    parts = record.parts_sha256
    labels: list[tuple[str, str, str | None]] = []
    if parts.get("summary") is not None and record.summary_archive_seq is not None:
        labels.append(
            (
                "summary",
                f"Working memory after archive {record.summary_archive_seq}",
                f"{base}/archives/{record.summary_archive_seq}",
            )
        )
    if parts.get("memories") is not None:
        labels.append(("memories", f"{len(record.memories)} recalled memories", None))
    if parts.get("pinned") is not None:
        labels.append(("pinned", f"{record.pins_sent} of {len(record.pin_ids)} pins", None))
    seqs = [
        *(("filled", seq) for seq in expand_ranges(record.filled_ranges)),
        *(("tail", seq) for seq in expand_ranges(record.tail_ranges)),
    ]
    cleared, redacted = set(record.cleared_seqs), set(record.redacted_seqs)
    redacted |= {int(item.id) for item in rendering.unavailable if item.part == "message"}
    messages: list[SeenMessage] = []
    heads: Sequence[dict[str, Any]] = rendering.messages[: len(labels)]
    for (kind, label, link), message in zip(labels, heads, strict=False):
        messages.append(SeenMessage(kind, label, message, link=link))
    for (kind, seq), message in zip(seqs, rendering.messages[len(labels) :], strict=False):
        archive_seq = archive_of.get(seq)
        link = (
            None
            if archive_seq is None
            else f"{base}/archives/{archive_seq}/messages?after_seq={seq - 1}#m{seq}"
        )
        label = f"Message #{seq}" + (" (repeated by fill)" if kind == "filled" else "")
        messages.append(
            SeenMessage(
                kind,
                label,
                message,
                seq=seq,
                link=link,
                cleared=seq in cleared,
                redacted=seq in redacted,
            )
        )
    return Seen(agent_session, record, rendering, tuple(messages), archive_of)
