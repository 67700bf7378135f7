"""A session's ``memory_policy`` as OpenViking's clients send it, read into workmem's policy.

Owns the one translation: OpenViking's ``self.enabled`` switch is long-term extraction for the
session's own user, its ``peer`` switch is accepted (workmem keeps no memories of a message's
peer), and its memory type names are read as workmem's categories where one matches. workmem's
own fields (``working_memory``, ``long_term_extraction``, ``memory_types``) are accepted beside
them, their switches as a flag or in OpenViking's ``{"enabled": …}`` shape. Pure; a body that
cannot be read raises ``PolicyError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from app.memories.policy import (
    FIELDS,
    LONG_TERM_EXTRACTION,
    MEMORY_TYPES,
    WORKING_MEMORY,
    MemoryPolicy,
    PolicyError,
    parse_policy,
)

SWITCHES: Final = ("self", "peer")
TYPE_NAMES: Final[Mapping[str, str]] = {
    "profile": "profile",
    "preferences": "preference",
    "entities": "entity",
    "events": "event",
    "cases": "lesson",
}
"""OpenViking's memory type names that have a workmem category (workmem's own names are read
as themselves)."""


def read_policy(raw: object) -> MemoryPolicy:
    """The policy a create or config request names; ``PolicyError`` for anything else."""
    if not isinstance(raw, Mapping):
        raise PolicyError("memory_policy", "must be an object")
    unknown = sorted(str(key) for key in raw if key not in (*FIELDS, *SWITCHES))
    if unknown:
        raise PolicyError(
            unknown[0], f"unknown field; expected one of {', '.join((*SWITCHES, *FIELDS))}"
        )
    body = {key: value for key, value in raw.items() if key in FIELDS}
    # A switch may come in OpenViking's shape, {"enabled": …}, as well as a bare flag.
    for flag in (WORKING_MEMORY, LONG_TERM_EXTRACTION):
        if isinstance(body.get(flag), Mapping):
            body[flag] = _switch(raw, flag)
    own = _switch(raw, "self")
    _switch(raw, "peer")
    if own is not None:
        given = body.get(LONG_TERM_EXTRACTION)
        if given is not None and given != own:
            raise PolicyError("self", f"contradicts {LONG_TERM_EXTRACTION}")
        body[LONG_TERM_EXTRACTION] = own
    types = body.get(MEMORY_TYPES)
    if isinstance(types, list):
        body[MEMORY_TYPES] = [
            TYPE_NAMES.get(name, name) if isinstance(name, str) else name for name in types
        ]
    return parse_policy(body)


def _switch(raw: Mapping[object, object], field: str) -> bool | None:
    value = raw.get(field)
    if value is None:
        return None
    if isinstance(value, Mapping) and set(value) <= {"enabled"}:
        enabled = value.get("enabled")
        if enabled is None or isinstance(enabled, bool):
            return enabled
    raise PolicyError(field, 'must be {"enabled": true} or {"enabled": false}')
