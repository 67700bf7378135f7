"""User corrections: when a user message corrects the assistant, what was wrong, what replaced it.

Owns the correction rule of the offline extractor: a user message that opens with an explicit
marker ("that's wrong", "actually", "I meant", ...), or with "no," after a statement (after a
question it is an answer), or that says to do something "instead", corrects the assistant's
latest message; the replaced statement is that message's sentence sharing most words with the
correction. In a conversation between people only the explicit markers count ("actually" is
small talk there). Never decides which section an item goes to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from app.wm.anchors import title_words
from app.wm.extractor.reading import clip, sentences
from app.wm.messages import MessageView

_EXPLICIT: Final = re.compile(
    r"^(?:(?:no|nope|oh|hmm|wait)[,.!:;]?\s+)?(?:"
    r"that['’]?s (?:wrong|incorrect|not (?:right|correct|true|what i (?:asked|said|meant|want)))"
    r"|that is (?:wrong|incorrect|not (?:right|correct|true|what i (?:asked|said|meant|want)))"
    r"|(?:this|it)(?:['’]s| is) (?:wrong|incorrect|not right)"
    r"|wrong\b|not quite\b|i said\b|i meant\b|you misunderstood|correction\b)",
    re.IGNORECASE,
)
_ACTUALLY: Final = re.compile(r"^(?:(?:no|oh|um|well)[,.!]?\s+)?actually\b", re.IGNORECASE)
_NO: Final = re.compile(r"^(?:no|nope)\b", re.IGNORECASE)
_INSTEAD: Final = re.compile(r"\binstead\b(?!\s+of\b)", re.IGNORECASE)
_LEADING_MARKER: Final = re.compile(
    r"^(?:(?:no|nope|oh|hmm|wait|um|well)\b[,.!:;]?\s*)*(?:(?:actually|correction)\b[,.!:;]?\s*"
    r"|(?:that['’]?s|that is|this is|it['’]?s|it is) (?:wrong|incorrect|not right|not correct|"
    r"not true|not what i (?:asked|said|meant|want))\b[,.!:;]?\s*|wrong\b[,.!:;]?\s*)?",
    re.IGNORECASE,
)
_REPLACED_CHARS: Final = 160


@dataclass(frozen=True, slots=True)
class Correction:
    """What the user said instead (``replacement``) and the assistant's statement it replaced
    (empty when that statement is not in the batch)."""

    replacement: str
    replaced: str


def is_explicit(text: str) -> bool:
    """An explicit correction marker opens the text: it corrects whatever it answers."""
    return _EXPLICIT.match(text.strip()) is not None


def correction(view: MessageView, previous: MessageView | None, *, chat: bool) -> Correction | None:
    """The correction ``view`` (a user message) makes of ``previous`` (the assistant's latest
    message before it, if it is in the batch), or ``None`` when it corrects nothing."""
    text = view.text.strip()
    said = sentences(text)
    if not said:
        return None
    explicit = is_explicit(text)
    if not explicit:
        if chat or previous is None:
            return None
        after_statement = not previous.text.rstrip().endswith(("?", "？"))
        if not (
            _ACTUALLY.match(text)
            or (_NO.match(text) and after_statement)
            or any(_INSTEAD.search(sentence) for sentence in said[:2])
        ):
            return None
    # What replaced it: the first sentence after its marker ("No, that is wrong: use 8080."),
    # or the next sentence when the first is only the marker ("That's wrong. Use 8080.").
    replacement = _LEADING_MARKER.sub("", said[0], count=1).strip(" ,.;:!-–—")
    if not replacement and len(said) > 1:
        replacement = said[1]
    if not replacement:
        if previous is None:
            return None  # "No, wrong." says nothing on its own: what it corrects is not here
        replacement = said[0]
    replaced = "" if previous is None else _replaced(previous, replacement)
    return Correction(replacement, replaced)


def _replaced(previous: MessageView, replacement: str) -> str:
    """The previous message's statement that shares most meaningful words with the correction
    (its first statement when none shares any)."""
    statements = [s for s in sentences(previous.text) if not s.endswith(("?", "？"))]
    if not statements:
        return ""
    wanted = title_words(replacement)
    best = max(statements, key=lambda s: len(title_words(s) & wanted))
    if not title_words(best) & wanted:
        best = statements[0]
    return clip(best, _REPLACED_CHARS)
