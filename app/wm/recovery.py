"""Recovery of malformed tool arguments: parse, then repair, then a tolerant per-section scanner.

Owns DESIGN 3.6 and the recovery order of 3.7. Text it recovers from a damaged payload is always
a prefix of what the model wrote; it never invents an op. Never raises, and never merges (the
result goes to ``merge`` like any other arguments).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from app.wm.reasons import RecoveryPath
from app.wm.schema import CREATE_FIELD, has_well_formed_op, is_well_formed, locate_ops
from app.wm.sections import SECTIONS, Section, parse, section_for

__all__ = ["Recovery", "RecoveryPath", "recover_arguments", "recover_document", "repair"]


@dataclass(frozen=True, slots=True)
class Recovery:
    """Usable arguments (``{"sections": {...}}``) or None, and which path produced them.

    ``scanned`` names the sections the scanner supplied; with ``parsed`` or ``repaired`` they are
    the ones the parse did not yield a well-formed op for.
    """

    arguments: dict[str, object] | None
    path: RecoveryPath
    scanned: tuple[Section, ...] = ()


_TYPOGRAPHIC_QUOTES: Final = "\u201c\u201d\u201e\u201f"
_QUOTES: Final = '"' + _TYPOGRAPHIC_QUOTES
_ESCAPES: Final = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_AFTER_STRING: Final = ",}]:"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NAME_PATTERN: Final = "|".join(
    r"\s+".join(re.escape(word) for word in section.value.split()) for section in SECTIONS
)
_SECTION_KEY = re.compile(
    r"(?<!\\)[" + _QUOTES + r"]\s*(" + _NAME_PATTERN + r")\s*[" + _QUOTES + r"]\s*:",
    re.IGNORECASE,
)
_PARTIAL_TAIL = re.compile(r"[\s\",}\]" + _TYPOGRAPHIC_QUOTES + r"]+$")
_CREATE_KEY = re.compile(
    r"[{,]\s*[" + _QUOTES + r"]" + CREATE_FIELD + r"[" + _QUOTES + r"]\s*:", re.IGNORECASE
)
_FENCED = re.compile(r"\s*```[\w-]*[ \t]*\n(.*?)\n[ \t]*```\s*", re.DOTALL)
# A drive path whose separators may all look like escapes (C:\new\table.py): two separators, or
# one and a file extension.
_DRIVE_PATH = re.compile(r"(?<!\w)[A-Za-z]:\\[\w.-]*[\w-](?:\\|\.[A-Za-z0-9]{1,8}(?![\w]))")
_ESCAPE_CODES: Final = '"\\/bfnrt' + _TYPOGRAPHIC_QUOTES


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
        if raw[index] not in _QUOTES or (index and raw[index - 1] == "\\"):
            index += 1
            continue
        text, index, _ = _read_string(raw, index, end)
        if _SECTION_KEY.search(text) is None:
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


def repair(raw: str) -> str | None:
    """The payload with the damage JSON can be fixed for, or None when only the scanner can help.

    Starts at the first ``{`` (prose and code fences around it are dropped), stops at its
    matching ``}``, turns typographic quotes used as JSON quotes into ``"`` (a string opened by
    one ends at a quote that ends a value; other quotes in it are text), escapes raw control
    characters and raw backslashes (a Windows path) inside strings, drops commas before a closer,
    and closes what a truncation left open. A payload cut inside a string, a number, after a key
    or in a list before its first item is not repaired: closing it would invent a value the
    model did not finish.
    """
    start = raw.find("{")
    if start < 0:
        return None
    out: list[str] = []
    stack: list[str] = []
    closers = ""
    literal = False
    index, end = start, len(raw)
    while index < end:
        char = raw[index]
        index += 1
        if closers:
            if char == "\\" and not literal:
                if index >= end:
                    return None
                # An escape (the word holds no raw backslash): copied as it is, except before a
                # typographic quote, which is text once the backslash is gone.
                escaped = raw[index]
                out.append(escaped if escaped in _TYPOGRAPHIC_QUOTES else char + escaped)
                index += 1
            elif char == "\\":
                out.append("\\\\")
            elif char in closers and (closers == '"' or _ends_value(raw, index, end)):
                out.append('"')
                closers = ""
            elif char == '"':
                out.append('\\"')
            elif ord(char) < 0x20:
                out.append(_escape_control(char))
            else:
                out.append(char)
            if char.isspace():
                literal = _backslashes_are_text(raw, index, end)
            continue
        if char in _QUOTES:
            closers = '"' if char == '"' else _QUOTES
            out.append('"')
            literal = _backslashes_are_text(raw, index, end)
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
            out.append(char)
        elif char in "}]":
            if stack[-1] != char:
                return None
            _drop_trailing_comma(out)
            out.append(stack.pop())
            if not stack:
                return "".join(out)
        else:
            out.append(char)
    if closers:
        return None
    _drop_trailing_comma(out)
    text = "".join(out).rstrip()
    if text.endswith((":", "[")) or _ends_in_number(text):
        return None
    return text + "".join(reversed(stack))


def _ends_value(text: str, index: int, end: int) -> bool:
    """Whether a quote just before ``index`` ends a JSON value: what follows closes or separates."""
    after = _skip_space(text, index, end)
    return after >= end or text[after] in _AFTER_STRING


def _backslashes_are_text(text: str, index: int, end: int) -> bool:
    r"""Whether the word at ``index`` (up to a space or a quote) holds backslashes written raw.

    One backslash that starts no JSON escape (``\U``, ``\m``, one before a space), or a drive
    path (``C:\new\table.py``), says the model typed a Windows path without escaping it: every
    backslash of the word is then text, ``\n``-looking ones included, so the text recovered is
    the text written. Escapes in other words of the same string still decode.
    """
    stop = index
    while stop < end:
        char = text[stop]
        if char.isspace() or char in _QUOTES:
            break
        if char != "\\":
            stop += 1
            continue
        if stop + 1 >= end:
            break
        code = text[stop + 1]
        if code == "u":
            digits = text[stop + 2 : min(stop + 6, end)]
            if len(digits) < 4:
                break
            if _HEX4.fullmatch(digits) is None:
                return True
            stop += 6
        elif code in _ESCAPE_CODES:
            stop += 2
        else:
            return True
    return _DRIVE_PATH.search(text, index, stop) is not None


def _escape_control(char: str) -> str:
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return named.get(char, f"\\u{ord(char):04x}")


def _drop_trailing_comma(out: list[str]) -> None:
    while out and out[-1].isspace():
        out.pop()
    if out and out[-1] == ",":
        out.pop()


def _ends_in_number(text: str) -> bool:
    match = re.search(r"[0-9.eE+-]+$", text)
    return match is not None and (match.group(0)[0].isdigit() or match.group(0)[0] == "-")


# Scanner ---------------------------------------------------------------------------------------


def scan_sections(raw: str, skip: frozenset[Section] = frozenset()) -> dict[Section, object]:
    """Well-formed ops found by a tolerant scan, section by section (DESIGN 3.6 step 3).

    Each op is read from its ``{`` up to its matching ``}`` or the next section's key, whichever
    comes first; string-aware, so ``]`` and ``}`` inside items and content are only text.
    """
    keys = list(_SECTION_KEY.finditer(raw))
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


def _skip_space(text: str, index: int, end: int, extra: str = "") -> int:
    while index < end and (text[index].isspace() or text[index] in extra):
        index += 1
    return index


def _scan_op(text: str, index: int, end: int, followed: bool) -> dict[str, object] | None:
    index = _skip_space(text, index, end)
    if index >= end or text[index] != "{":
        return None
    index += 1
    fields: dict[str, object] = {}
    while True:
        index = _skip_space(text, index, end, ",")
        if index >= end or text[index] == "}":
            break
        if text[index] not in _QUOTES:
            index += 1
            continue
        key, index, closed = _read_string(text, index, end)
        if not closed:
            break
        index = _skip_space(text, index, end)
        if index >= end or text[index] != ":":
            continue
        index = _skip_space(text, index + 1, end)
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
    if char in _QUOTES:
        value, index, closed = _read_string(text, index, end)
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


def _read_string(text: str, index: int, end: int) -> tuple[str, int, bool]:
    """A string starting at a quote: its text, where reading stopped, and whether it closed.

    A quote closes the string only when what follows it (after spaces) ends a JSON value; any
    other quote is taken as an unescaped quote inside the text.
    """
    closers = '"' if text[index] == '"' else _QUOTES
    chars: list[str] = []
    index += 1
    literal = _backslashes_are_text(text, index, end)
    while index < end:
        char = text[index]
        if char == "\\" and not literal:
            if index + 1 >= end:
                return "".join(chars), end, False
            decoded, index = _read_escape(text, index, end)
            chars.append(decoded)
            continue
        if char in closers and _ends_value(text, index + 1, end):
            return "".join(chars), index + 1, True
        chars.append(char)
        index += 1
        if char.isspace():
            literal = _backslashes_are_text(text, index, end)
    return "".join(chars), end, False


def _read_escape(text: str, index: int, end: int) -> tuple[str, int]:
    code = text[index + 1]
    if code == "u" and _HEX4.fullmatch(text, index + 2, min(index + 6, end)):
        return chr(int(text[index + 2 : index + 6], 16)), index + 6
    return _ESCAPES.get(code, code), index + 2


def _read_items(text: str, index: int, end: int) -> tuple[list[object], int, bool]:
    """The complete items of a list, where reading stopped, and whether the text ended first."""
    items: list[object] = []
    while True:
        index = _skip_space(text, index, end, ",")
        if index >= end:
            return items, index, True
        char = text[index]
        if char == "]":
            return items, index + 1, False
        if char in _QUOTES:
            value, index, closed = _read_string(text, index, end)
            if not closed:
                return items, index, True
            items.append(value)
            continue
        number = _NUMBER.match(text, index, end)
        if number is not None:
            after = _skip_space(text, number.end(), end)
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
        if char in _QUOTES:
            _, index, _ = _read_string(text, index, end)
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        index += 1
    return index
