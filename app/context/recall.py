"""The ``[Relevant Memories]`` message: recalled long-term memories within their token room.

Owns the wording of the block and which recalled memories fit: in the order given (most relevant
first, newest first among conflicting ones), each whole or not at all, until the room is used.
Pure; never searches (the service did) and never decides the room (``assembly`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from app.memories.records import SearchHit
from app.wm.tokens import TokenCounter

RECALL_HEADER: Final = "[Relevant Memories]"
RECALL_INTRO: Final = (
    "Long-term memories about the user from earlier sessions, most relevant first, each with the "
    "date it was last stated; where they disagree with the messages that follow, the messages win."
)
RECALL_SHARE: Final = 4
"""The block takes at most a quarter of the usable budget, so recall never crowds out the
conversation itself."""


@dataclass(frozen=True, slots=True)
class Recall:
    """The block as sent (``None`` when nothing was recalled or nothing fits), the memories in
    it, and how many recalled ones were left out for the budget."""

    text: str | None
    tokens: int
    included: tuple[SearchHit, ...]
    left_out: int


def _line(hit: SearchHit) -> str:
    memory = hit.memory
    content = " ".join(memory.content.split())
    return f"- ({memory.category}, {memory.updated_at.date().isoformat()}) {content}"


def recall_block(hits: Sequence[SearchHit], room: int, counter: TokenCounter) -> Recall:
    """The memories of ``hits`` that fit ``room`` tokens, as one message text."""
    if not hits:
        return Recall(None, 0, (), 0)
    lines = [RECALL_HEADER, RECALL_INTRO]
    included: list[SearchHit] = []
    tokens = 0
    for hit in hits:
        candidate = "\n".join([*lines, _line(hit)])
        candidate_tokens = counter(candidate)
        if candidate_tokens > room:
            break
        lines.append(_line(hit))
        included.append(hit)
        tokens = candidate_tokens
    if not included:
        return Recall(None, 0, (), len(hits))
    return Recall("\n".join(lines), tokens, tuple(included), len(hits) - len(included))


NO_RECALL: Final = Recall(None, 0, (), 0)
"""What a context that did not ask to recall carries."""
