"""Scoring a context: which anchors a list of chat messages holds, and what truncation would send.

Pure. Owns the text a model sees in a message list (contents, tool-call names and arguments,
tool results, and the system-prompt addition), anchor recall by kind over it, and the baseline:
the newest messages that fit a budget, tool groups whole, with no summary. Never calls the
service.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from app.context.outgoing import outgoing
from app.context.units import fit_units, group_units
from app.replay.anchors import Anchor, words
from app.sessions.records import StoredMessage
from app.wm.messages import read_messages


@dataclass(frozen=True, slots=True)
class Recall:
    found: int
    total: int

    @property
    def share(self) -> float | None:
        return None if self.total == 0 else self.found / self.total

    def __add__(self, other: Recall) -> Recall:
        return Recall(self.found + other.found, self.total + other.total)


class Haystack:
    """The text of a message list as a model reads it, lower-cased, with its word set."""

    def __init__(self, text: str) -> None:
        self.text = text.lower()

    @classmethod
    def of(cls, messages: Iterable[Mapping[str, Any]], system: str = "") -> Haystack:
        parts = [system]
        for view in read_messages(list(messages)):
            parts.append(view.text)
            parts += [f"{call.name} {call.arguments}" for call in view.tool_calls]
        return cls("\n".join(parts))

    @cached_property
    def words(self) -> frozenset[str]:
        return frozenset(words(self.text))

    def holds(self, anchor: Anchor) -> bool:
        if anchor.is_word:
            return anchor.value in self.words
        pattern = r"(?<![\w])" + re.escape(anchor.value) + r"(?![\w])"
        return re.search(pattern, self.text) is not None


def recall(anchors: Sequence[Anchor], haystack: Haystack) -> dict[str, Recall]:
    """Found and total anchors by kind, and ``all`` of them pooled."""
    by_kind: dict[str, Recall] = {}
    for anchor in anchors:
        found = Recall(1 if haystack.holds(anchor) else 0, 1)
        by_kind[anchor.kind] = by_kind.get(anchor.kind, Recall(0, 0)) + found
    by_kind["all"] = sum(by_kind.values(), Recall(0, 0))
    return by_kind


@dataclass(frozen=True, slots=True)
class Truncated:
    messages: list[dict[str, Any]]
    tokens: int


def truncation(history: Sequence[StoredMessage], budget: int) -> Truncated:
    """The baseline at ``budget``: the newest messages that fit, tool groups whole (the newest
    user message always, as assembly does), no summary; sent as the context sends messages."""
    units, _ = group_units(history, complete=True)
    fit = fit_units(units, budget)
    sent = [outgoing(member.message)[0] for unit in fit.included for member in unit.members]
    return Truncated(sent, fit.tokens)
