"""Recovery of malformed tool arguments: parse, then repair, then a tolerant per-section scanner.

Owns DESIGN 3.6's order and the success rules of 3.7 (``repair`` and ``scanner`` are its
steps). Text it recovers from a damaged payload is always a prefix of what the model wrote; it
never invents an op. Never raises, and never merges (the result goes to ``merge`` like any other
arguments).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from app.wm.json_text import QUOTES, read_string
from app.wm.reasons import RecoveryPath
from app.wm.repair import repair
from app.wm.scanner import SECTION_KEY, scan_sections
from app.wm.schema import CREATE_FIELD, has_well_formed_op, is_well_formed, locate_ops
from app.wm.sections import SECTIONS, Section, parse

__all__ = [
    "Recovery",
    "RecoveryPath",
    "recover_arguments",
    "recover_document",
    "repair",
    "scan_sections",
]


@dataclass(frozen=True, slots=True)
class Recovery:
    """Usable arguments (``{"sections": {...}}``) or None, and which path produced them.

    ``scanned`` names the sections the scanner supplied; with ``parsed`` or ``repaired`` they are
    the ones the parse did not yield a well-formed op for.
    """

    arguments: dict[str, object] | None
    path: RecoveryPath
    scanned: tuple[Section, ...] = ()


_CREATE_KEY = re.compile(
    r"[{,]\s*[" + QUOTES + r"]" + CREATE_FIELD + r"[" + QUOTES + r"]\s*:", re.IGNORECASE
)
_FENCED = re.compile(r"\s*```[\w-]*[ \t]*\n(.*?)\n[ \t]*```\s*", re.DOTALL)
# A drive path whose separators may all look like escapes (C:\new\table.py): two separators, or
# one and a file extension.


def recover_arguments(raw: str) -> Recovery:
    """Usable arguments from a tool-call argument string, by the first path that works.

    A parse or repair counts only when it yields a well-formed op for one of the seven names
    (DESIGN 3.7); the scanner then reads every section the parse did not yield a well-formed op
    for, and the union is used: parsed well-formed ops first, then scanned ones, then parsed
    unusable ones (kept so that the merge reports them). When neither finds anything, a payload
    given as a JSON string inside a wrapper (``{"tool_input": "{...}"}``) is read from that string.
    """
    recovery = _recover(raw)
    if recovery.arguments is None:
        inside = _payload_in_strings(raw)
        if inside:
            return _combined(RecoveryPath.SCANNED, {}, inside)
    return recovery


def _recover(raw: str) -> Recovery:
    path: RecoveryPath | None = None
    located: dict[Section, object] = {}
    parsed = _loads(raw)
    if has_well_formed_op(parsed):
        path, located = RecoveryPath.PARSED, locate_ops(parsed)
    else:
        repaired_text = repair(raw)
        repaired = None if repaired_text is None else _loads(repaired_text)
        if has_well_formed_op(repaired):
            path, located = RecoveryPath.REPAIRED, locate_ops(repaired)
    yielded = {section for section, op in located.items() if is_well_formed(op)}
    scanned = scan_sections(raw, skip=frozenset(yielded))
    if path is None and not scanned:
        return Recovery(None, RecoveryPath.UNRECOVERABLE)
    return _combined(path or RecoveryPath.SCANNED, located, scanned)


def _combined(
    path: RecoveryPath, located: Mapping[Section, object], scanned: Mapping[Section, object]
) -> Recovery:
    combined = {**located, **scanned}
    for section, op in located.items():
        if is_well_formed(op):
            combined[section] = op
    sections = {s.value: combined[s] for s in SECTIONS if s in combined}
    return Recovery({"sections": sections}, path, tuple(s for s in SECTIONS if s in scanned))


def _payload_in_strings(raw: str) -> dict[Section, object]:
    """Ops of a payload serialised into a string value (one level deep), first string first."""
    found: dict[Section, object] = {}
    index, end = 0, len(raw)
    while index < end:
        if raw[index] not in QUOTES or (index and raw[index - 1] == "\\"):
            index += 1
            continue
        text, index, _ = read_string(raw, index, end)
        if SECTION_KEY.search(text) is None:
            continue
        inner = _recover(text)
        if inner.arguments is not None:
            for section, op in locate_ops(inner.arguments).items():
                found.setdefault(section, op)
    return found


def recover_document(raw: str) -> str | None:
    """The Markdown of a creation call: its ``markdown`` argument, or a plain-text answer.

    Arguments are parsed, then repaired (so a payload cut after its closing quote is used); a
    text without a ``markdown`` key counts as the document itself, out of a code fence if it is
    in one. Either way the document must name at least one of the seven sections; anything else
    is None (unusable: the caller falls back, DESIGN 4.3). A document cut inside its string is
    unusable too, for the same reason a cut UPDATE body is dropped: it would end mid-sentence.
    """
    for text in (raw, repair(raw)):
        value = None if text is None else _loads(text)
        if isinstance(value, Mapping) and CREATE_FIELD in value:
            return _usable_document(value[CREATE_FIELD])
    if _CREATE_KEY.search(raw) is not None:
        return None
    fenced = _FENCED.fullmatch(raw)
    return _usable_document(raw if fenced is None else fenced.group(1))


def _usable_document(document: object) -> str | None:
    return document if isinstance(document, str) and parse(document).found else None


def _loads(text: str) -> object:
    for _ in range(2):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, str):
            return value
        # A double-encoded payload: the arguments were serialised twice.
        text = value
    return None


# Repair ----------------------------------------------------------------------------------------
