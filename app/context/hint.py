"""The ``system_prompt_addition`` of an assembled context: what the model is told about the summary.

Owns the wording: the summary is lossy, newer raw messages win, and where exact older messages are
(the archives by number, the expand endpoint, history search). Pure text from facts; it never
decides what is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

ARCHIVE_INDEX_LIMIT: Final = 20
"""Archives listed in a context (newest first); older ones are one list request away."""
_TOKENS_PER_LISTED_ARCHIVE: Final = 2_500
"""One archive named in the hint per this many usable tokens (at least 3): about 10 tokens each,
so the list stays under 0.5 % of the budget."""


@dataclass(frozen=True, slots=True)
class ArchiveRange:
    archive_seq: int
    start_seq: int
    end_seq: int


def listed_archives(usable_tokens: int) -> int:
    """How many archives the hint names at this usable budget."""
    return max(3, min(ARCHIVE_INDEX_LIMIT, usable_tokens // _TOKENS_PER_LISTED_ARCHIVE))


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def _index(index: Sequence[ArchiveRange], listed: int) -> str:
    first, *rest = index[:listed]
    parts = [f"{first.archive_seq} = messages {_span(first.start_seq, first.end_seq)}"]
    parts += [f"{a.archive_seq} = {_span(a.start_seq, a.end_seq)}" for a in rest]
    if (rest[-1] if rest else first).archive_seq > 1:
        parts.append("and older")
    return ", ".join(parts)


def system_prompt_addition(
    agent_session_id: str,
    *,
    summary_archive: ArchiveRange | None,
    index: Sequence[ArchiveRange],
    listed: int,
    summary_sent: bool = True,
    fill: bool = False,
) -> str:
    """The text to append to the system prompt; empty when nothing has been archived.

    ``index`` is the newest archives, newest first; ``summary_archive`` the done archive whose
    working memory covers the oldest messages (``None`` when no archive is done yet), and
    ``summary_sent`` whether it opens the messages or was left out for the budget; ``fill``
    whether covered messages may follow it. The session id is written once: ids cost about
    twenty tokens each.
    """
    if not index:
        return ""
    newest = index[0]
    expand = (
        f"Exact older messages are kept in numbered archives ({_index(index, listed)}); to read "
        f"one, call GET /v1/sessions/{agent_session_id}/archives/{{archive_seq}} (without the "
        f"number, the same path lists them); to find the messages that hold given words, call "
        f"the same session's /history/search?q={{words}}."
    )
    if summary_archive is None:
        return (
            f"Messages 1-{newest.end_seq} of this conversation are archived but not summarised "
            f"yet: their raw messages are shown from the newest back, as far as the token budget "
            f"allows. {expand}"
        )
    covered = f"1-{summary_archive.end_seq}"
    after = f"archive {summary_archive.archive_seq}"
    if summary_sent and fill:
        # Names the boundary, never the filled range: the range shrinks as new messages take
        # the room, and this text must stay byte-identical between commits (prompt caches).
        last = summary_archive.end_seq
        parts = [
            f'The first message, "[Session History Summary]", is a lossy summary of messages '
            f"{covered} (the working memory after {after}). It may be followed by the newest of "
            f"those messages, up to message {last}, repeated raw for their exact wording; "
            f"messages after {last} are newer, and raw messages win where they and the summary "
            f"disagree."
        ]
        shown = "follow the summary"
    elif summary_sent:
        parts = [
            f'The first message, "[Session History Summary]", is a lossy summary of messages '
            f"{covered} (the working memory after {after}); the messages after it are newer and "
            f"win where the two disagree."
        ]
        shown = "follow the summary"
    else:
        parts = [
            f"Messages {covered} of this conversation are summarised (the working memory after "
            f"{after}), but the summary was left out to fit the token budget."
        ]
        shown = "are shown from the newest back"
    if newest.archive_seq > summary_archive.archive_seq:
        first = summary_archive.archive_seq + 1
        messages = _span(summary_archive.end_seq + 1, newest.end_seq)
        if first == newest.archive_seq:
            parts.append(
                f"Archive {first} (messages {messages}) is not summarised yet: its raw messages "
                f"{shown}, as far as the token budget allows."
            )
        else:
            parts.append(
                f"Archives {first}-{newest.archive_seq} (messages {messages}) are not summarised "
                f"yet: their raw messages {shown}, as far as the token budget allows."
            )
    parts.append(expand)
    return " ".join(parts)
