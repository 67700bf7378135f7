"""Word-level diff of two versions of a section, for the archive page.

Owns splitting a text into words and the whitespace between them, and the shortest edit between
two such sequences (``difflib``). Pure: no I/O, no HTML; the template marks the segments up.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

SegmentKind = Literal["same", "added", "removed"]

_TOKENS = re.compile(r"\s+|[^\s]+")
REWRITE_RATIO = 0.4
"""Below this share of words in common (difflib's ratio, whitespace aside) two versions read
as a rewrite."""


@dataclass(frozen=True, slots=True)
class Segment:
    kind: SegmentKind
    text: str


def words(text: str) -> list[str]:
    """Words and the whitespace runs between them; joined, they are the text again."""
    return _TOKENS.findall(text)


def word_diff(old: str, new: str) -> tuple[Segment, ...]:
    """Segments that read as ``new`` when ``removed`` ones are skipped, and as ``old`` when
    ``added`` ones are; neighbours of one kind are joined."""
    before, after = words(old), words(new)
    # autojunk off: in a long section, frequent words like "-" must not be ignored as junk.
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    shared = difflib.SequenceMatcher(None, old.split(), new.split(), autojunk=False)
    if before and after and shared.ratio() < REWRITE_RATIO:
        # A rewrite, not an edit: interleaving its few shared words would be unreadable.
        return (Segment("removed", old), Segment("added", new))
    segments: list[Segment] = []

    def emit(kind: SegmentKind, tokens: list[str]) -> None:
        if not tokens:
            return
        text = "".join(tokens)
        if segments and segments[-1].kind == kind:
            segments[-1] = Segment(kind, segments[-1].text + text)
        else:
            segments.append(Segment(kind, text))

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            emit("same", before[i1:i2])
            continue
        emit("removed", before[i1:i2])
        emit("added", after[j1:j2])
    return tuple(segments)
