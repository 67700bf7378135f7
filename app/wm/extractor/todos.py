"""TODOs: the tasks people mark as still to do, kept whole.

Owns what a TODO is — ``TODO`` or ``FIXME`` opening a line or a sentence, or followed by a colon
or a dash — and its text: everything after the marker up to the end of its line, never the text
before it, never cut inside (only a line longer than ``TODO_CHARS`` is cut, at a word). A
mention in passing ("the TODOs in the parser") is not one. Never decides the section's op.
"""

from __future__ import annotations

import re
from typing import Final

from app.wm.extractor.reading import clip

TODO_CHARS: Final = 500
_MARKER: Final = re.compile(
    r"(?:^|(?<=[.!?;]\s)|(?<=^[-*+>]\s))\s*\b(?:TODO|FIXME)\b\s*[:\-–]?\s*"
    r"|\b(?:TODO|FIXME)\b\s*[:\-–]\s*"
)


def todos_of(text: str) -> list[str]:
    """The TODO texts of a message, in order, each from its marker to the end of its line."""
    if "TODO" not in text and "FIXME" not in text:
        return []  # most messages: no line of them is read
    found: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        match = _MARKER.search(stripped)
        while match is not None:
            rest = stripped[match.end() :]
            following = _MARKER.search(rest)
            body = (rest[: following.start()] if following else rest).strip(" -–")
            if body:
                found.append(clip(body, TODO_CHARS))
            stripped, match = rest, following
    return found
