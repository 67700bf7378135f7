"""Section ops: what a model may ask for one section (KEEP, UPDATE, APPEND).

Owns the typed form of an op once it has been read from tool arguments. Never reads raw JSON
(that is `schema`) and never applies an op (that is `merge`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class OpKind(StrEnum):
    KEEP = "KEEP"
    UPDATE = "UPDATE"
    APPEND = "APPEND"


@dataclass(frozen=True, slots=True)
class SectionOp:
    """One op. ``content`` is meaningful for UPDATE only, ``items`` for APPEND only.

    APPEND items are already split into single lines with bullet markers removed.
    """

    kind: OpKind
    content: str = ""
    items: tuple[str, ...] = ()


KEEP = SectionOp(OpKind.KEEP)


def update(content: str) -> SectionOp:
    return SectionOp(OpKind.UPDATE, content=content)


def append(items: tuple[str, ...] | list[str]) -> SectionOp:
    return SectionOp(OpKind.APPEND, items=tuple(items))
