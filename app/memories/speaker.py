"""A user's sentence as the memory rules read it, and which sentences can speak of the user.

Owns cleaning a sentence (fillers and the listener's name removed), the words by which it is
about its speaker (a first-person word, or a leading subjectless verb: "Took a trip to Rome"),
and the one search that tells, for the many sentences of a long message such as pasted tool
output, that a sentence holds none of them (nor a correction of the agent) and so states no
memory: the rules then pass it over. Pure.
"""

from __future__ import annotations

from typing import Final

from app.memories import patterns as p
from app.memories.text import normalise, whole_words
from app.wm.anchors import PROPER_NOUN_STOP_WORDS

FIRST_PERSON: Final = frozenset(
    {"i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "we", "we're", "we've", "our"}
)
FIRST_PERSON_WORD: Final = whole_words(FIRST_PERSON)
"""A first-person word of normalised text, as a whole word (``tokens``)."""
_NOT_A_LETTER: Final = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})
_ABOUT_WORDS: Final = frozenset(
    {word.split("'")[0] for word in FIRST_PERSON} | set(p.SUBJECTLESS_VERBS.split("|"))
)
"""The plain-ASCII runs of letters and digits a sentence about the user holds one of."""
_CORRECTION_WORDS: Final = frozenset({"no", "nope", "actually", "wrong", "that"})


def clean(sentence: str) -> str:
    """A user's sentence as a memory would say it: plain apostrophes, without the listener's
    name or leading fillers ("So, well, …"), its first letter capitalised."""
    text = sentence.replace("’", "'").strip()
    text = p.ADDRESSEE.sub("", text) if p.ADDRESSEE.match(text) and _addressed(text) else text
    text = p.LEADING_FILLER.sub("", text).strip()
    return text[:1].upper() + text[1:] if text else text


def _addressed(text: str) -> bool:
    """``Mel, I moved`` names the listener; ``Paris, I love it`` would be a topic (kept)."""
    name = text.split(maxsplit=1)[0].rstrip(",!").lower()
    return name not in PROPER_NOUN_STOP_WORDS


def about_user(sentence: str) -> bool:
    """A subjectless sentence ("Took a trip to Rome"), or one with a first-person word."""
    return (
        p.SUBJECTLESS.match(sentence) is not None
        or FIRST_PERSON_WORD.search(normalise(sentence)) is not None
    )


def may_concern_user(sentence: str, *, corrections: bool) -> bool:
    """Whether a user's ``sentence`` (as ``sentences`` cut it), once cleaned, could be about
    the user (``about_user``) or, with ``corrections``, correct the agent. ``True`` unless that
    is sure: cleaning removes a leading stretch that ends in a space and capitalises the first
    letter, so for plain ASCII a first-person word or a leading verb of the cleaned sentence is
    a run of letters and digits of this one. Only for sentences no longer than the clip: a clip
    ending in ``…`` can make a new word (``my…`` from ``mythical``)."""
    if not sentence.isascii():
        return True
    words = sentence.lower().translate(_NOT_A_LETTER).split()
    if not _ABOUT_WORDS.isdisjoint(words):
        return True
    return (
        corrections
        and not _CORRECTION_WORDS.isdisjoint(words)
        and p.CORRECTION.match(clean(sentence)) is not None
    )
