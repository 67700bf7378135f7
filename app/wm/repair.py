"""Repair of damaged JSON tool arguments (DESIGN 3.6 step 2): what ``json.loads`` can be made to
read without inventing a value.

Prose and code fences around the object are dropped, typographic quotes used as JSON quotes
become ``"``, raw control characters are escaped, commas before a closer are dropped, and what a
truncation left open is closed. Pure; never reads ops (that is ``schema``).
"""

from __future__ import annotations

import re

from app.wm.json_text import (
    QUOTES,
    TYPOGRAPHIC_QUOTES,
    backslashes_are_text,
    ends_value,
)


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
                out.append(escaped if escaped in TYPOGRAPHIC_QUOTES else char + escaped)
                index += 1
            elif char == "\\":
                out.append("\\\\")
            elif char in closers and (closers == '"' or ends_value(raw, index, end)):
                out.append('"')
                closers = ""
            elif char == '"':
                out.append('\\"')
            elif ord(char) < 0x20:
                out.append(_escape_control(char))
            else:
                out.append(char)
            if char.isspace():
                literal = backslashes_are_text(raw, index, end)
            continue
        if char in QUOTES:
            closers = '"' if char == '"' else QUOTES
            out.append('"')
            literal = backslashes_are_text(raw, index, end)
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
