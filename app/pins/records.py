"""A pin as the rest of the service sees it: pure data, no database, no web framework.

Owns the value context assembly and the working-memory prompts take (``Pin``) and how a pin is
written in a prompt. Never decides what fits a budget (``app.context.pinned``) or what may be
pinned (``service``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from app.wm.sections import Section


@dataclass(frozen=True, slots=True)
class Pin:
    """One active pin: a text, or (``message_seq``) that message's exact text; ``section`` is
    the working-memory section it belongs with, when its writer named one."""

    pin_id: uuid.UUID
    text: str
    message_seq: int | None
    section: Section | None
    token_count: int
    pinned_by: uuid.UUID
    created_at: datetime

    @property
    def line(self) -> str:
        """The pin as one entry of a list: its text, after where it came from."""
        origin = [] if self.section is None else [self.section.value]
        if self.message_seq is not None:
            origin.append(f"message {self.message_seq}, exact text")
        return f"({'; '.join(origin)}) {self.text}" if origin else self.text
