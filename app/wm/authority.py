"""Who a message is: the roles an item's sources have, and the messages that may give a
constraint. Pure; read by ``provenance`` and by generation when it numbers an archive's messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from app.wm.guards import states_constraint
from app.wm.items import normalise
from app.wm.messages import MessageView, read_messages

_INSTRUCTING: Final = frozenset({"user", "system"})
"""Who may give a constraint: the user, and the operator in a system message (an agent's own
policy); an assistant or a tool result never does."""
AUTHORITIES: Final = ("user", "system", "pin", "assistant", "tool")
"""Who an item's sources are, in the order ``authority`` lists them."""


def authority_of(roles: object) -> tuple[str, ...]:
    """Known roles, once each, in the order of ``AUTHORITIES``."""
    found = set(roles) if isinstance(roles, (list, tuple, set, frozenset)) else set()
    return tuple(role for role in AUTHORITIES if role in found)


def message_roles(
    messages: Sequence[Mapping[str, object]], first_seq: int, pinned: frozenset[int] = frozenset()
) -> dict[int, tuple[str, ...]]:
    """Seq → who the message is (its role, and ``pin`` when a pin names it)."""
    return _roles(read_messages(messages), first_seq, pinned)


def constraint_evidence(messages: Sequence[Mapping[str, object]], first_seq: int) -> dict[int, str]:
    """The user and system messages (numbered from ``first_seq``) whose text has a constraint
    keyword of guard C: seq → the text, normalised (what a quoting item is compared with)."""
    return _evidence(read_messages(messages), first_seq)


def roles_and_evidence(
    messages: Sequence[Mapping[str, object]], first_seq: int, pinned: frozenset[int] = frozenset()
) -> tuple[dict[int, tuple[str, ...]], dict[int, str]]:
    """``message_roles`` and ``constraint_evidence`` of the same messages, read once (an
    archive's messages are many: reading them is most of the cost of either)."""
    views = read_messages(messages)
    return _roles(views, first_seq, pinned), _evidence(views, first_seq)


def _roles(
    views: Sequence[MessageView], first_seq: int, pinned: frozenset[int]
) -> dict[int, tuple[str, ...]]:
    return {
        first_seq + view.position: authority_of(
            {view.role, "pin"} if first_seq + view.position in pinned else {view.role}
        )
        for view in views
    }


def _evidence(views: Sequence[MessageView], first_seq: int) -> dict[int, str]:
    return {
        first_seq + view.position: normalise(view.text)
        for view in views
        if view.role in _INSTRUCTING and states_constraint(view.text)
    }
