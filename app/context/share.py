"""What a filled context's summary displaces, so that its brief can hold it.

Pure. A summary sent cut to its layer takes room that truncation would have given to the newest
summarised messages; those it displaces are the ones just older than the filled ones, as many
as truncation would still send. Their specific terms (ids, codes, numbers, dates, paths, then
names), newest message first, lead the summary's brief (``summary``): the context then holds
truncation's own newest messages raw, and what it displaced of them in brief. Never decides the
layer or the fill.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.context.assembly import Assembly
from app.context.brief import brief_terms
from app.context.fill import choose_fill
from app.sessions.records import StoredMessage
from app.wm.messages import read_messages
from app.wm.tokens import TokenCounter


def is_reduced(assembly: Assembly) -> bool:
    """Whether the summary was sent cut to its layer (only then does it displace anything)."""
    summary = assembly.summary
    return summary is not None and summary.text is not None and bool(summary.cuts)


def displaced(
    covered: Sequence[StoredMessage], assembly: Assembly, usable: int, counter: TokenCounter
) -> tuple[StoredMessage, ...]:
    """The newest of ``covered`` (oldest first, up to the summary's boundary) older than what
    the context filled, that fit the room truncation would have had beside the raw messages the
    context sends: whole tool groups, newest first, as truncation walks."""
    oldest = assembly.filled[0].seq if assembly.filled else None
    older = [m for m in covered if oldest is None or m.seq < oldest]
    room = usable - assembly.message_tokens - assembly.filled_tokens
    return choose_fill(older, room, counter=counter).messages


def displaced_terms(messages: Sequence[StoredMessage]) -> list[str]:
    """The specific terms of ``messages``, newest message first: every id, then every name."""
    texts: list[str] = []
    for view in reversed(read_messages([dict(m.message) for m in messages])):
        texts.append("\n".join([view.text, *(f"{c.name} {c.arguments}" for c in view.tool_calls)]))
    return brief_terms(texts, frozenset())
