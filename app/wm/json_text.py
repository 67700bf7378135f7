"""The lexical rules of JSON text as models write it: which quote closes a string, which
backslash is an escape and which is text (a Windows path), where a value ends.

Shared by ``repair`` and the per-section ``scanner``; pure, and never decides what an op is.
"""

from __future__ import annotations

import re
from typing import Final

TYPOGRAPHIC_QUOTES: Final = "\u201c\u201d\u201e\u201f"
QUOTES: Final = '"' + TYPOGRAPHIC_QUOTES
_ESCAPES: Final = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_AFTER_STRING: Final = ",}]:"
_DRIVE_PATH = re.compile(r"(?<!\w)[A-Za-z]:\\[\w.-]*[\w-](?:\\|\.[A-Za-z0-9]{1,8}(?![\w]))")
_ESCAPE_CODES: Final = '"\\/bfnrt' + TYPOGRAPHIC_QUOTES


def skip_space(text: str, index: int, end: int, extra: str = "") -> int:
    while index < end and (text[index].isspace() or text[index] in extra):
        index += 1
    return index


def ends_value(text: str, index: int, end: int) -> bool:
    """Whether a quote just before ``index`` ends a JSON value: what follows closes or separates."""
    after = skip_space(text, index, end)
    return after >= end or text[after] in _AFTER_STRING


def backslashes_are_text(text: str, index: int, end: int) -> bool:
    r"""Whether the word at ``index`` (up to a space or a quote) holds backslashes written raw.

    One backslash that starts no JSON escape (``\U``, ``\m``, one before a space), or a drive
    path (``C:\new\table.py``), says the model typed a Windows path without escaping it: every
    backslash of the word is then text, ``\n``-looking ones included, so the text recovered is
    the text written. Escapes in other words of the same string still decode.
    """
    stop = index
    while stop < end:
        char = text[stop]
        if char.isspace() or char in QUOTES:
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


def read_string(text: str, index: int, end: int) -> tuple[str, int, bool]:
    """A string starting at a quote: its text, where reading stopped, and whether it closed.

    A quote closes the string only when what follows it (after spaces) ends a JSON value; any
    other quote is taken as an unescaped quote inside the text.
    """
    closers = '"' if text[index] == '"' else QUOTES
    chars: list[str] = []
    index += 1
    literal = backslashes_are_text(text, index, end)
    while index < end:
        char = text[index]
        if char == "\\" and not literal:
            if index + 1 >= end:
                return "".join(chars), end, False
            decoded, index = _read_escape(text, index, end)
            chars.append(decoded)
            continue
        if char in closers and ends_value(text, index + 1, end):
            return "".join(chars), index + 1, True
        chars.append(char)
        index += 1
        if char.isspace():
            literal = backslashes_are_text(text, index, end)
    return "".join(chars), end, False


def _read_escape(text: str, index: int, end: int) -> tuple[str, int]:
    code = text[index + 1]
    if code == "u" and _HEX4.fullmatch(text, index + 2, min(index + 6, end)):
        return chr(int(text[index + 2 : index + 6], 16)), index + 6
    return _ESCAPES.get(code, code), index + 2
