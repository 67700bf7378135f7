"""Word-level diff of two versions of a section, for the archive page.

Owns splitting a text into lines, words and the whitespace between them, and the shortest edit
between two versions: lines first (they are nearly unique, so this stays fast on long sections),
then words inside the lines that changed. Pure: no I/O, no HTML; the template marks it up.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

SegmentKind = Literal["same", "added", "removed"]

_TOKENS = re.compile(r"\s+|[^\s]+")
REWRITE_RATIO = 0.4
"""Below this share of words in common (difflib's ratio, whitespace aside) two versions of a
passage read as a rewrite, shown whole as removed then added."""
WORD_PAIRS_LIMIT = 1_000_000
"""Above this many (old word, new word) pairs a changed passage is shown whole: difflib is
quadratic on repeated words, and the page must stay fast."""


@dataclass(frozen=True, slots=True)
class Segment:
    kind: SegmentKind
    text: str


def words(text: str) -> list[str]:
    """Words and the whitespace runs between them; joined, they are the text again."""
    return _TOKENS.findall(text)


class _Segments:
    """Segments in order, neighbours of one kind joined."""

    def __init__(self) -> None:
        self.items: list[Segment] = []

    def add(self, kind: SegmentKind, text: str) -> None:
        if not text:
            return
        if self.items and self.items[-1].kind == kind:
            self.items[-1] = Segment(kind, self.items[-1].text + text)
        else:
            self.items.append(Segment(kind, text))


def _changed_passage(out: _Segments, old: str, new: str) -> None:
    """Words of a replaced passage; a rewrite is shown whole."""
    if not old or not new or len(old.split()) * len(new.split()) > WORD_PAIRS_LIMIT:
        out.add("removed", old)
        out.add("added", new)
        return
    shared = difflib.SequenceMatcher(None, old.split(), new.split(), autojunk=False)
    if shared.ratio() < REWRITE_RATIO:
        out.add("removed", old)
        out.add("added", new)
        return
    before, after = words(old), words(new)
    # autojunk off: in a long passage, frequent words like "-" must not be ignored as junk.
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.add("same", "".join(before[i1:i2]))
        else:
            out.add("removed", "".join(before[i1:i2]))
            out.add("added", "".join(after[j1:j2]))


def word_diff(old: str, new: str) -> tuple[Segment, ...]:
    """Segments that read as ``new`` when ``removed`` ones are skipped, and as ``old`` when
    ``added`` ones are."""
    before, after = old.splitlines(keepends=True), new.splitlines(keepends=True)
    # Lines are matched by their text alone: the last line of a section has no line break
    # until an APPEND adds a line after it, and it is the same line all the same.
    lines = difflib.SequenceMatcher(
        None, [_text(line) for line in before], [_text(line) for line in after], autojunk=False
    )
    out = _Segments()
    for tag, i1, i2, j1, j2 in lines.get_opcodes():
        if tag == "equal":
            for was, now in zip(before[i1:i2], after[j1:j2], strict=True):
                text = _text(now)
                out.add("same", text)
                if was[len(text) :] == now[len(text) :]:
                    out.add("same", now[len(text) :])
                else:
                    out.add("removed", was[len(text) :])
                    out.add("added", now[len(text) :])
        else:
            _changed_passage(out, "".join(before[i1:i2]), "".join(after[j1:j2]))
    return tuple(out.items)


def _text(line: str) -> str:
    """A line without its line break."""
    return line.rstrip("\r\n")
