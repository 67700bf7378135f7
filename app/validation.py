"""Input that Postgres cannot store, or that could not be answered again once stored.

Owns the checks applied to every free-form value (messages, metadata, labels, request bodies)
before any work is done, so such input answers 422 instead of failing inside the database or in
the answer after the commit: NUL characters and lone UTF-16 surrogates, numbers that are not
finite, nesting beyond a fixed depth; and the repair used where such text must be kept instead
(an import). Never reads configuration or touches the database.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

SEQ_MAX: Final = 2**63 - 1
"""The largest seq Postgres can hold (``bigint``): every seq a request names is bounded by it."""

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def find_unstorable(
    value: object, path: tuple[str | int, ...] = ()
) -> tuple[str | int, ...] | None:
    """The location of the first string (value or key) that cannot be stored, or ``None``."""
    if isinstance(value, str):
        return path if _UNSTORABLE.search(value) else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and _UNSTORABLE.search(key):
                return path
            found = find_unstorable(item, (*path, str(key)))
            if found is not None:
                return found
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = find_unstorable(item, (*path, index))
            if found is not None:
                return found
    return None


def require_storable(value: object) -> None:
    """Raise ``ValueError`` (a 422 inside a pydantic validator) for unstorable text."""
    found = find_unstorable(value)
    if found is not None:
        where = "/".join(str(part) for part in found) or "value"
        raise ValueError(f"{where} contains a NUL character or an unpaired surrogate")


def replace_unstorable(value: object) -> object:
    """``value`` with every NUL and lone surrogate (in strings and keys) replaced by U+FFFD, for
    input that must be kept rather than refused (an import of another store's files)."""
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, Mapping):
        return {
            replace_unstorable(key) if isinstance(key, str) else key: replace_unstorable(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [replace_unstorable(item) for item in value]
    return value


# --- JSON values that every serializer on the way can carry ------------------------------------

MAX_VALUE_DEPTH = 32
"""Deepest nesting of one stored JSON value (a message, a metadata object). Far below what the
serializers on the way refuse (pydantic's 255 levels, Python's recursion limit, Postgres's
stack), so a value that was stored can always be answered, whatever envelope it is read in."""

MAX_BODY_DEPTH = 64
"""Deepest nesting of a whole request body (a batch wraps its messages in two more levels)."""


def json_problem(
    value: object, *, max_depth: int = MAX_VALUE_DEPTH
) -> tuple[tuple[str | int, ...], str] | None:
    """Where ``value`` cannot be stored as JSON and answered again, and why; ``None`` if it can.

    Refused: nesting deeper than ``max_depth`` and numbers that are not finite (``NaN``,
    ``Infinity``, or a literal like ``1e400`` beyond a double), which Postgres's JSON rejects
    and serializers would turn into ``null``. Iterative, so no input can exhaust the stack.
    """
    pending: list[tuple[object, tuple[str | int, ...], int]] = [(value, (), 0)]
    while pending:
        item, path, depth = pending.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return path, "is not a finite number (NaN and Infinity are not JSON)"
            continue
        if isinstance(item, Mapping):
            children: Iterable[tuple[str | int, object]] = (
                (str(key), child) for key, child in item.items()
            )
        elif isinstance(item, list | tuple):
            children = enumerate(item)
        else:
            continue
        if depth >= max_depth:
            return path, f"nests deeper than {max_depth} levels"
        pending.extend((child, (*path, key), depth + 1) for key, child in children)
    return None


def require_json(value: object, *, max_depth: int = MAX_VALUE_DEPTH) -> None:
    """Raise ``ValueError`` (a 422 inside a pydantic validator) for a value ``json_problem``
    refuses, naming where it is."""
    found = json_problem(value, max_depth=max_depth)
    if found is not None:
        path, reason = found
        raise ValueError(f"{describe(path, 'the value')} {reason}")


class _Refused(ValueError):
    pass


def _refuse_constant(name: str) -> object:
    raise _Refused(f"{name} is not JSON: numbers must be finite")


MAX_INTEGER_DIGITS = 4000
"""Digits of the longest integer accepted: Python itself refuses to print or parse longer ones
(4300), so such a number could be stored but never read back."""


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _Refused(f"an integer of {len(text)} digits is out of range")
    return int(text)


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _Refused(f"{text} is out of range: numbers must be finite doubles")
    return number


def loads_strict(raw: bytes | str) -> Any:
    """Parse a request body as strict JSON: what Postgres and every reader can take back.

    ``json.loads`` accepts ``NaN``, ``Infinity`` and ``1e400`` (as infinity), and fails on deep
    nesting or huge integers with errors that are not about the input; here each is a
    ``json.JSONDecodeError`` saying what is wrong, so the answer is a 422.
    """
    try:
        text = raw if isinstance(raw, str) else raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as error:
        raise json.JSONDecodeError("the body is not UTF-8", "", error.start) from None
    try:
        parsed = json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(
            f"the body nests deeper than {MAX_BODY_DEPTH} levels", text, 0
        ) from None
    except _Refused as error:
        raise json.JSONDecodeError(str(error), text, 0) from None
    found = json_problem(parsed, max_depth=MAX_BODY_DEPTH)
    if found is not None:
        path, reason = found
        raise json.JSONDecodeError(f"{describe(path, 'the body')} {reason}", text, 0)
    return parsed


def describe(path: tuple[str | int, ...], whole: str) -> str:
    """A location for an error message: the path, shortened when it is long."""
    if not path:
        return whole
    shown = [str(part) for part in path[:6]]
    return "/".join(shown) + ("/…" if len(path) > 6 else "")
