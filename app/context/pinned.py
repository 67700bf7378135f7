"""The ``[Pinned]`` message: an agent session's pins within their token room.

Owns the wording of the block and which pins fit: in the order they were pinned, each whole or
not at all, the ones left out counted in a marked line. Pure; never reads pins (the service
did) and never decides the room (``assembly`` gives the pins the summary's layer first, so the
summary is cut, every section of it, before a pin is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from app.pins.records import Pin
from app.wm.tokens import TokenCounter

PINNED_HEADER: Final = "[Pinned]"
PINNED_INTRO: Final = (
    "Pinned for this session by the user or the agent: never summarised away, and where the "
    "summary disagrees with them, they win."
)


@dataclass(frozen=True, slots=True)
class Pinned:
    """The block as sent (``None`` without pins or when not even one fits), the pins in it,
    and how many were left out for the budget."""

    text: str | None
    tokens: int
    included: tuple[Pin, ...]
    left_out: int


NO_PINS: Final = Pinned(None, 0, (), 0)


def _cut_line(left_out: int) -> str:
    return f"- [cut: {left_out} more pin{'' if left_out == 1 else 's'}, to fit the token budget]"


def pinned_block(pins: Sequence[Pin], room: int, counter: TokenCounter) -> Pinned:
    """The pins of ``pins`` that fit ``room`` tokens, as one message text."""
    if not pins:
        return NO_PINS
    head = [PINNED_HEADER, PINNED_INTRO]
    lines = [f"- {pin.line}" for pin in pins]
    for count in range(len(pins), 0, -1):
        body = (
            lines[:count] if count == len(pins) else [*lines[:count], _cut_line(len(pins) - count)]
        )
        text = "\n".join([*head, *body])
        tokens = counter(text)
        if tokens <= room:
            return Pinned(text, tokens, tuple(pins[:count]), len(pins) - count)
    return Pinned(None, 0, (), len(pins))
