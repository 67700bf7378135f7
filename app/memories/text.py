"""Words of a text as long-term memory compares them: tokens, light stems, content words.

Owns the one tokenizer shared by the hashing embedder, the rule extractor's slot keys and the
provenance check, so that all three agree on what a word is. Pure; never embeds or extracts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from itertools import islice
from typing import Final

_LETTER: Final = r"[^\W_]"
_WORD: Final = re.compile(rf"{_LETTER}+(?:['’]{_LETTER}+)*")


def _words(listing: str) -> list[str]:
    return listing.split()


STOP_WORDS: Final = frozenset(
    _words(
        """a an the and or but of to in on at for with by from as is are was were be been being am
    it its this that these those there here i me my mine we us our you your he him his she her
    they them their so very just really also too then than into about over up out if do does did
    have has had will would shall should can could may might must s t d ll ve re m o oh um uh
    yeah yes ok okay well"""
    )
)
"""Function words left out of content words: they say little about what a memory is about.
Negations (not, no, never, don't) are kept, since they change what a sentence states."""

_SUFFIXES: Final = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "s")


def normalise(text: str) -> str:
    """NFKC, casefolded, typographic apostrophes made plain."""
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'")


def tokens(text: str) -> list[str]:
    """The words of ``text`` in order, normalised (``Don’t`` → ``don't``)."""
    return _WORD.findall(normalise(text))


def at_most_words(text: str, limit: int) -> bool:
    """Whether ``text`` has at most ``limit`` words (``len(tokens(text)) <= limit``), reading
    no further than the word after the limit."""
    # Casing never splits or joins a word, so plain ASCII is read as it is.
    found = _WORD.finditer(text if text.isascii() else normalise(text))
    return next(islice(found, limit, None), None) is None


def whole_words(words: Iterable[str]) -> re.Pattern[str]:
    """A pattern that finds any of ``words`` in normalised text exactly where ``tokens`` would
    read it as a word of its own: not part of a longer word, nor joined to one by an apostrophe.
    ``whole_words(W).search(normalise(t))`` finds something iff a token of ``t`` is in ``W``."""
    alternatives = "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))
    return re.compile(
        rf"(?<!{_LETTER})(?<!{_LETTER}')(?:{alternatives})(?!{_LETTER})(?!'{_LETTER})"
    )


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """``_stem_once`` twice, so a plural of a gerund meets its verb (``paintings`` → ``paint``).
    Kept for the words met last: the same words come back in every text."""
    return _stem_once(_stem_once(word))


def _stem_once(word: str) -> str:
    """A light stem: one common English suffix removed when enough letters remain, so
    ``painting`` and ``painted`` meet at ``paint`` and ``stories`` at ``story``. Not a linguistic
    stemmer: an honest, predictable lexical one."""
    for suffix in _SUFFIXES:
        least = 2 if suffix in ("ies", "ied") else 3
        if not word.endswith(suffix) or len(word) - len(suffix) < least:
            continue
        base = word[: -len(suffix)]
        if suffix in ("ies", "ied"):
            return base + "y"
        if suffix == "es" and not base.endswith(("s", "x", "z", "ch", "sh")):
            # lakes is lake + s, but boxes is box + es.
            continue
        if suffix == "s" and base.endswith(("s", "u", "i")):
            return word
        if suffix in ("ing", "ed") and base[-1] == base[-2] and base[-1] not in "lsz":
            # running → runn → run; but spelling and kissed keep their double letter.
            return base[:-1]
        return base
    return word


def content_words(text: str) -> list[str]:
    """Stems of the words that are not function words, in order (duplicates kept)."""
    return [stem(word) for word in tokens(text) if word not in STOP_WORDS]
