"""What a context must keep, per conversation: the anchors the retention evaluation looks for.

Pure. Owns which values of a source's reference data are anchors (LoCoMo answers and the facts
of their evidence turns; τ-bench gold action arguments; SWE-agent paths, raised errors and the
fix) and how an anchor is found in a text (a whole word, or a phrase between word boundaries,
case-insensitive). Never reads the service and never scores a context (``scoring`` does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from app.replay.formats import Conversation, ReplayFormat
from app.wm.anchors import anchor_spans
from app.wm.messages import read_messages
from app.wm.paths import find_paths

_WORD: Final = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_ERROR_NAME: Final = re.compile(r"\b([A-Z]\w*(?:Error|Exception))\b:")
_CODE_LISTING: Final = re.compile(r"^\s*\d+:")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_DIFF_PATH: Final = re.compile(r"^\+\+\+ b/(\S+)", re.MULTILINE)
_LOCOMO_SKIPPED_CATEGORY: Final = 5
"""Adversarial questions: their answer is that the conversation does not say."""


def _word_list(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP_WORDS: Final = _word_list(
    """
    a an the and or but of to in on at for from by with as into about over after before is are was
    were be been being am do does did has have had it its this that these those he she they them
    his her their him we us our you your i me my mine not no yes so than then there here when what
    which who whom how why also just very too can could would should will shall might must
    some any all more most other such only own same both each few many much s t don't didn't
    """
)
_PYTHON_WORDS: Final = _word_list(
    """
    and as assert async await break class continue def del elif else except finally for from
    global if import in is lambda nonlocal not or pass raise return try while with yield none
    true false self print len str int float list dict set tuple range
    """
)


@dataclass(frozen=True, slots=True)
class Anchor:
    """One value a context should keep: its kind (what it is) and its text, lower-cased."""

    kind: str
    value: str

    @property
    def is_word(self) -> bool:
        return _WORD.fullmatch(self.value) is not None


def words(text: str) -> list[str]:
    """The lower-cased words of a text (letters and digits; an inner apostrophe kept)."""
    return _WORD.findall(text.lower())


def anchors_of(conversation: Conversation) -> list[Anchor]:
    """The anchors of a conversation, by its source; distinct per (kind, value), sorted."""
    if conversation.source is ReplayFormat.LOCOMO:
        found = _locomo(conversation.reference)
    elif conversation.source is ReplayFormat.TAU_BENCH:
        found = _tau(conversation.reference.get("actions", []))
    elif conversation.source is ReplayFormat.SWE_AGENT:
        found = _swe(conversation.messages, str(conversation.reference.get("submission", "")))
    else:
        found = []
    return sorted(set(found), key=lambda anchor: (anchor.kind, anchor.value))


def _locomo(reference: Mapping[str, Any]) -> list[Anchor]:
    speakers = {
        name.lower() for speaker in reference.get("speakers", []) for name in words(speaker)
    }
    turns: Mapping[str, str] = reference.get("turns", {})
    found: list[Anchor] = []
    for qa in reference.get("qa", []):
        if qa.get("category") == _LOCOMO_SKIPPED_CATEGORY or "answer" not in qa:
            continue
        for word in words(str(qa["answer"])):
            if word not in STOP_WORDS and word not in speakers:
                found.append(Anchor("answer", word))
        for dia_id in qa.get("evidence", []):
            for span in anchor_spans(turns.get(str(dia_id), "")):
                if span.kind != "decision" and span.key not in speakers:
                    found.append(Anchor("evidence", span.key))
    return found


def _tau(actions: Iterable[Any]) -> list[Anchor]:
    found: list[Anchor] = []
    for action in actions:
        if isinstance(action, Mapping):
            found += [Anchor("action_argument", value) for value in _leaves(action.get("kwargs"))]
    return found


def _leaves(value: object) -> list[str]:
    """Argument values worth keeping: strings of 3+ characters that are not common words, and
    numbers of two or more digits (amounts, counts of one digit say little)."""
    if isinstance(value, Mapping):
        return [leaf for inner in value.values() for leaf in _leaves(inner)]
    if isinstance(value, list):
        return [leaf for inner in value for leaf in _leaves(inner)]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        text = json.dumps(value)
        return [text] if len(text.removesuffix(".0")) >= 2 else []
    text = str(value).strip().lower()
    return [text] if len(text) >= 3 and text not in STOP_WORDS else []


def _swe(messages: Sequence[Mapping[str, Any]], submission: str) -> list[Anchor]:
    found: list[Anchor] = []
    for view in read_messages(messages):
        texts = [view.text] if view.role in ("user", "assistant") else []
        texts += [call.arguments for call in view.tool_calls]
        for text in texts:
            for path in find_paths(text.replace("\\n", "\n")):
                segments = [s for s in re.split(r"[/\\]", path) if s]
                if any(len(s) > 2 for s in segments) and "site-packages" not in path:
                    found.append(Anchor("path", path.lower()))
        if view.role in ("user", "tool"):
            for line in view.text.splitlines():
                if not _CODE_LISTING.match(line):
                    found += [Anchor("error", name.lower()) for name in _ERROR_NAME.findall(line)]
    found += _fix(submission)
    return found


def _fix(submission: str) -> list[Anchor]:
    """The fix in a final diff: the files it changes and the identifiers its added lines bring
    that its removed lines did not have."""
    added: set[str] = set()
    removed: set[str] = set()
    for line in submission.splitlines():
        if line.startswith(("+++", "---")):
            continue
        if line.startswith("+"):
            added.update(_IDENTIFIER.findall(line[1:]))
        elif line.startswith("-"):
            removed.update(_IDENTIFIER.findall(line[1:]))
    fixed = [Anchor("fix", path.lower()) for path in _DIFF_PATH.findall(submission)]
    fixed += [
        Anchor("fix", name.lower()) for name in added - removed if name.lower() not in _PYTHON_WORDS
    ]
    return fixed
