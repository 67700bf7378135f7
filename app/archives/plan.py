"""How an archive's messages are cut into batches, and where a generation stands between them.

Owns the offline batches (each ending between tool groups, within a budget), the runs of
consecutive seqs a batch never spans, the plan of one archive (its batches and what every
batch's attribution reads of all of it) and the progress a generation made through a plan.
Pure: ``generation`` makes and runs plans, ``prepared`` stores progress and says when a later
generation may resume from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.wm.provenance import SectionSources
from app.wm.sections import Section
from app.wm.tokens import message_text


def offline_batches(
    messages: Sequence[Mapping[str, object]], budget: int
) -> list[list[Mapping[str, object]]]:
    """Batches of about ``budget`` tokens for the offline extractor, each ending between tool
    groups (a call stays with its results), as a model's batches do.

    The extractor has no input limit: batches only keep its per-step caps in proportion to the
    input, so a message's size is its text's length over four (rendering and counting every
    message of a large archive would cost more than extracting from it).
    """
    batches: list[list[Mapping[str, object]]] = []
    current: list[Mapping[str, object]] = []
    used = 0
    for message in messages:
        cost = len(message_text(message)) // 4 + 1
        if current and message.get("role") != "tool" and used + cost > budget:
            batches.append(current)
            current, used = [], 0
        current.append(message)
        used += cost
    batches.append(current)
    return batches


def consecutive_runs(numbers: Sequence[int]) -> list[tuple[int, int]]:
    """The ``(start, end)`` index ranges of ``numbers`` that count up by one without a gap."""
    runs: list[tuple[int, int]] = []
    start = 0
    for index in range(1, len(numbers) + 1):
        if index == len(numbers) or numbers[index] != numbers[index - 1] + 1:
            runs.append((start, index))
            start = index
    return runs


@dataclass(frozen=True, slots=True)
class Plan:
    """An archive cut into batches (each with the seq of its first message), the input budget
    that cut them, and what every batch's attribution reads of the whole archive: the user's
    constraint messages (``evidence``) and who each message is (``roles``)."""

    budget: int
    batches: tuple[tuple[Sequence[Mapping[str, object]], int], ...]
    evidence: dict[int, str]
    roles: dict[int, tuple[str, ...]]

    def end_seq(self, batches: int) -> int:
        """The seq of the last message of the first ``batches`` batches (0 for none)."""
        if batches == 0:
            return 0
        part, first_seq = self.batches[batches - 1]
        return first_seq + len(part) - 1


@dataclass(frozen=True, slots=True)
class Progress:
    """The working memory after a plan's first ``batches`` batches."""

    batches: int
    sections: Mapping[Section, str]
    sources: Mapping[Section, SectionSources]


@dataclass(frozen=True, slots=True)
class Known:
    """What a plan made ahead knows of an archive's first batches, so a later plan of the same
    messages need not read them again: the budget that cut them, each batch's first seq and
    length, their constraint messages (``evidence``) and who each message is (``roles``, one
    per message of the batches in order, without the ``pin`` a pin adds: pins may change)."""

    budget: int
    cut: tuple[tuple[int, int], ...]
    evidence: Mapping[int, str]
    roles: tuple[tuple[str, ...], ...]

    @property
    def seqs(self) -> list[int]:
        return [seq for first, length in self.cut for seq in range(first, first + length)]


def known_of(plan: Plan, batches: int) -> Known:
    """What ``plan`` knows of its first ``batches`` batches."""
    cut = tuple((first_seq, len(part)) for part, first_seq in plan.batches[:batches])
    end = plan.end_seq(batches)
    seqs = [seq for first, length in cut for seq in range(first, first + length)]
    return Known(
        plan.budget,
        cut,
        {seq: text for seq, text in plan.evidence.items() if seq <= end},
        tuple(tuple(role for role in plan.roles.get(seq, ()) if role != "pin") for seq in seqs),
    )


class Resume(Protocol):
    """Asked, with an archive's plan, for progress through its first batches made ahead;
    ``known`` is what was known of those batches then (None: the plan reads every message)."""

    @property
    def known(self) -> Known | None: ...

    def __call__(self, plan: Plan) -> Progress | None: ...
