"""The shared reading of one batch of messages: talk, tool results, speakers, dates, sentences.

Owns what every section rule of the extractor needs to know about a batch, computed once, and
the text helpers they share (sentences, clipping, speaker labels, greetings). Never proposes an
op for any section.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from datetime import date
from functools import lru_cache
from itertools import accumulate, chain

from app.wm.extractor.dates import format_day, session_day
from app.wm.messages import MessageView
from app.wm.provenance import source_key
from app.wm.references import Seqs, normalised_seqs

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening)|thanks|thank you|greetings)\b",
    re.IGNORECASE,
)
LEADING_MARKUP = re.compile(r"^(?:[-*+]\s+|\d{1,3}[.)]\s+|#+\s+|>\s*)+")


class Reading:
    """What every section rule needs to know about the batch, computed once."""

    def __init__(
        self, views: list[MessageView], *, day: date | None = None, first_seq: int = 1
    ) -> None:
        """``day`` is the day in force before the first message (the prior working memory's
        latest session date), when the batch starts in the middle of a session; ``first_seq``
        the seq of the batch's first message (a view's seq is it plus the view's position)."""
        self.views = views
        self.first_seq = first_seq
        self.cited: dict[str, set[int]] = {}
        self.talk = [v for v in views if v.role in ("user", "assistant") and v.text.strip()]
        # Results are matched to the latest open call with their id, not by id alone: some
        # agents reuse a call id within one conversation.
        self.results: dict[tuple[int, int], MessageView] = {}
        open_calls: dict[str, tuple[int, int]] = {}
        for index, view in enumerate(views):
            for number, call in enumerate(view.tool_calls):
                open_calls[call.call_id] = (index, number)
            if view.role == "tool" and view.tool_call_id in open_calls:
                self.results[open_calls.pop(view.tool_call_id)] = view
        self.has_tools = any(v.tool_calls or v.role == "tool" for v in views)
        named = [v.speaker for v in self.talk if v.speaker not in ("user", "assistant")]
        self.speakers = list(dict.fromkeys(named))
        self.speaker_words = frozenset(name.lower() for name in self.speakers)
        self.chat = len(self.speakers) >= 2 and not self.has_tools
        # The day in force at each message: the latest one a system message gave (a session
        # header, "the current time is ..."), never a date someone merely talked about.
        self.days: list[date | None] = []
        self.day_sources: list[MessageView | None] = []
        latest, source = day, None
        for view in views:
            found = session_day(view.text) if view.role == "system" else None
            if found is not None:
                latest, source = found, view
            self.days.append(latest)
            self.day_sources.append(source)

    def seq(self, view: MessageView) -> int:
        return self.first_seq + view.position

    def cite(self, item: str, *views: MessageView | None) -> str:
        """Record that ``item`` was taken from ``views`` (its sources); returns the item."""
        seqs = (self.seq(view) for view in views if view is not None)
        self.cited.setdefault(source_key(item), set()).update(seqs)
        return item

    def citations(self) -> dict[str, Seqs]:
        return {key: normalised_seqs(seqs) for key, seqs in self.cited.items()}

    def day_of(self, index: int) -> date | None:
        return self.days[index]

    def date_before(self, index: int) -> str:
        day = self.days[index]
        return "" if day is None else format_day(day)


def clip(text: str, limit: int) -> str:
    """The text on one line, cut at a word boundary with an ellipsis when over ``limit``."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"


def sentences(text: str) -> list[str]:
    """Sentences and lines of a text, without list markers and bold markup."""
    return list(_sentences(text))


@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    # Every section rule reads the same messages' sentences: split each text once per batch.
    found: list[str] = []
    for line in text.splitlines():
        # List markers go before splitting, or "1. Second." would split after "1.".
        line = LEADING_MARKUP.sub("", line.replace("**", "").strip())
        for part in _SENTENCE_END.split(line):
            sentence = " ".join(part.split())
            if sentence:
                found.append(sentence)
    return tuple(found)


_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""What ``str.splitlines`` cuts at (``\r\n`` is one break)."""


def lines_holding(text: str, hits: Iterator[re.Match[str]]) -> Iterator[str]:
    """The lines of ``text`` (as ``splitlines`` cuts them) holding one of ``hits`` (matches in
    ``text``, in order), each once, in order: a rule that keeps only lines with some word reads
    those lines and skips the others, however long the text."""
    first = next(hits, None)
    if first is None:
        return
    pieces = text.splitlines(keepends=True)
    ends = list(accumulate(map(len, pieces)))
    last = -1
    for hit in chain((first,), hits):
        index = bisect_right(ends, hit.start())
        if index != last:
            last = index
            yield pieces[index].rstrip(_LINE_BREAKS)


def is_greeting(sentence: str) -> bool:
    return _GREETING.match(sentence) is not None and len(sentence.split()) <= 6


def label(view: MessageView) -> str:
    return view.speaker if view.speaker not in ("user", "assistant") else view.role.capitalize()
