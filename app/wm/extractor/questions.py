"""Open questions: the questions either side asks that no later message answers.

Owns when a question counts as answered: by the reply to its message (the next message from
someone else), unless that reply only acknowledges ("thanks", "ok") or corrects a statement;
or by one of the next messages from someone else (an answer comes soon or not at all) that
shares at least two meaningful words with it. Never decides the section's op.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from app.wm.anchors import PROPER_NOUN_STOP_WORDS, title_words
from app.wm.extractor.corrections import is_explicit
from app.wm.extractor.reading import label, sentences
from app.wm.messages import MessageView

QUESTION_MIN_WORDS: Final = 3
SHARED_WORDS: Final = 2
LOOKAHEAD: Final = 20
"""Messages from someone else after a question that may answer it by sharing its words (looked
for among the next twice as many messages)."""
_ACKNOWLEDGEMENT: Final = re.compile(
    r"^(?:(?:ok|okay|thanks|thank you|thx|cool|great|nice|perfect|awesome|sounds good|got it|"
    r"noted|sure|alright|all right|good|fine|wonderful|excellent|appreciate it|cheers)[\s,.!]*)+$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Question:
    """A question and who asked it; ``view`` is the message it was asked in."""

    asker: str
    text: str
    view: MessageView | None = field(default=None, compare=False)


def questions_of(view: MessageView) -> list[str]:
    """The question sentences of a message (three words or more)."""
    return [
        sentence
        for sentence in sentences(view.text)
        if sentence.endswith(("?", "？")) and len(sentence.split()) >= QUESTION_MIN_WORDS
    ]


def is_plain_reply(view: MessageView) -> bool:
    """A reply that can answer: not only an acknowledgement, not a correction of a statement."""
    text = view.text.strip()
    return not (_ACKNOWLEDGEMENT.match(text) or is_explicit(text))


def content_words(text: str) -> frozenset[str]:
    """Meaningful words (as a title's) without function words such as "which", "should"."""
    return title_words(text) - PROPER_NOUN_STOP_WORDS


def shares_words(question: str, text: str) -> bool:
    return len(content_words(question) & content_words(text)) >= SHARED_WORDS


def open_questions(talk: Sequence[MessageView]) -> list[Question]:
    """Questions of ``talk`` (messages in order) that no later message answers, in order."""
    found: list[Question] = []
    words: dict[int, frozenset[str]] = {}
    for index, view in enumerate(talk):
        asker = label(view)
        asked = questions_of(view)
        if not asked:
            continue
        window = range(index + 1, min(len(talk), index + 1 + 2 * LOOKAHEAD))
        later = [n for n in window if label(talk[n]) != asker][:LOOKAHEAD]
        replied = bool(later) and is_plain_reply(talk[later[0]])
        for question in asked:
            if replied:
                continue
            wanted = content_words(question)
            for n in later:
                if n not in words:
                    words[n] = content_words(talk[n].text)
            if any(len(wanted & words[n]) >= SHARED_WORDS for n in later):
                continue
            found.append(Question(asker, question, view))
    return found
