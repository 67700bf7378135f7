"""The tolerant per-section scanner (DESIGN 3.6 step 3): well-formed ops found in a payload
that no parse or repair could read.

Each op is read from its ``{`` up to its matching ``}`` or the next section's key, string-aware,
so ``]`` and ``}`` inside items and content are only text. Pure; never merges.
"""

from __future__ import annotations

import json
import re
from typing import Final

from app.wm.json_text import QUOTES, TYPOGRAPHIC_QUOTES, read_string, skip_space
from app.wm.schema import is_well_formed
from app.wm.sections import SECTIONS, Section, section_for

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NAME_PATTERN: Final = "|".join(
    r"\s+".join(re.escape(word) for word in section.value.split()) for section in SECTIONS
)
SECTION_KEY = re.compile(
    r"(?<!\\)[" + QUOTES + r"]\s*(" + _NAME_PATTERN + r")\s*[" + QUOTES + r"]\s*:",
    re.IGNORECASE,
)
_PARTIAL_TAIL = re.compile(r"[\s\",}\]" + TYPOGRAPHIC_QUOTES + r"]+$")


def scan_sections(raw: str, skip: frozenset[Section] = frozenset()) -> dict[Section, object]:
    """Well-formed ops found by a tolerant scan, section by section (DESIGN 3.6 step 3).

    Each op is read from its ``{`` up to its matching ``}`` or the next section's key, whichever
    comes first; string-aware, so ``]`` and ``}`` inside items and content are only text.
    """
    keys = list(SECTION_KEY.finditer(raw))
    found: dict[Section, object] = {}
    for index, key in enumerate(keys):
        section = section_for(key.group(1))
        if section is None or section in skip or section in found:
            continue
        followed = index + 1 < len(keys)
        end = keys[index + 1].start() if followed else len(raw)
        op = _scan_op(raw, key.end(), end, followed)
        if op is not None and is_well_formed(op):
            found[section] = op
    return found


def _scan_op(text: str, index: int, end: int, followed: bool) -> dict[str, object] | None:
    index = skip_space(text, index, end)
    if index >= end or text[index] != "{":
        return None
    index += 1
    fields: dict[str, object] = {}
    while True:
        index = skip_space(text, index, end, ",")
        if index >= end or text[index] == "}":
            break
        if text[index] not in QUOTES:
            index += 1
            continue
        key, index, closed = read_string(text, index, end)
        if not closed:
            break
        index = skip_space(text, index, end)
        if index >= end or text[index] != ":":
            continue
        index = skip_space(text, index + 1, end)
        name = key.strip().lower()
        value, index = _read_value(text, index, end, followed and name == "content")
        if value is not _ABSENT and name not in fields:
            fields[name] = value
    return fields if "op" in fields else None


class _Absent:
    pass


_ABSENT: Final = _Absent()


def _read_value(text: str, index: int, end: int, keep_partial: bool) -> tuple[object, int]:
    if index >= end:
        return _ABSENT, index
    char = text[index]
    if char in QUOTES:
        value, index, closed = read_string(text, index, end)
        if closed:
            return value, index
        if keep_partial:
            partial = _PARTIAL_TAIL.sub("", value)
            return (partial, index) if partial.strip() else (_ABSENT, index)
        return _ABSENT, index
    if char == "[":
        items, index, cut = _read_items(text, index + 1, end)
        # A list cut before its first complete item has no value, like a cut string.
        return (_ABSENT if cut and not items else items), index
    if char == "{":
        return _ABSENT, _skip_object(text, index + 1, end)
    while index < end and text[index] not in ",}":
        index += 1
    return _ABSENT, index


def _read_items(text: str, index: int, end: int) -> tuple[list[object], int, bool]:
    """The complete items of a list, where reading stopped, and whether the text ended first."""
    items: list[object] = []
    while True:
        index = skip_space(text, index, end, ",")
        if index >= end:
            return items, index, True
        char = text[index]
        if char == "]":
            return items, index + 1, False
        if char in QUOTES:
            value, index, closed = read_string(text, index, end)
            if not closed:
                return items, index, True
            items.append(value)
            continue
        number = _NUMBER.match(text, index, end)
        if number is not None:
            after = skip_space(text, number.end(), end)
            if after >= end:
                return items, after, True
            if text[after] not in ",]":
                return items, after, False
            literal = number.group(0)
            items.append(json.loads(literal))
            index = after
            continue
        index += 1


def _skip_object(text: str, index: int, end: int) -> int:
    depth = 1
    while index < end and depth:
        char = text[index]
        if char in QUOTES:
            _, index, _ = read_string(text, index, end)
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        index += 1
    return index
