"""Input that Postgres cannot store: NUL characters and lone UTF-16 surrogates.

Owns the check applied to every free-form value (messages, metadata, labels) before any work is
done, so such input answers 422 instead of failing inside the database; and the repair used
where such text must be kept instead (an import).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

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
