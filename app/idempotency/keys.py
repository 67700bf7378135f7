"""What an ``Idempotency-Key`` is and which request it stands for. Pure: no I/O.

Owns the header's rules (1–255 visible ASCII characters) and the request fingerprint: the
method, the path, the credential's user binding and the body (as canonical JSON), hashed. The
same key with another fingerprint is another request, refused rather than answered with the
first one's answer. Never decides what is stored.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Final

HEADER: Final = "Idempotency-Key"
MAX_LENGTH: Final = 255
PATTERN: Final = r"^[\x21-\x7e]+$"
"""Visible ASCII, no spaces: what a header value can carry unchanged through proxies."""


@dataclass(frozen=True, slots=True)
class RequestKey:
    """A write's idempotency key and the fingerprint of the request that carries it."""

    key: str
    request_sha256: str
    agent_session_id: uuid.UUID | None = None
    """The agent session the write is about (from its path): its answer goes with it when the
    agent session's user is erased."""


def canonical_json(value: object) -> bytes:
    """One spelling of a JSON value: keys sorted, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def fingerprint(*, method: str, path: str, user_id: str | None, body: bytes) -> str:
    """The SHA-256 (hex) of what makes two requests the same request."""
    digest = hashlib.sha256()
    for part in (method.upper().encode(), path.encode(), (user_id or "").encode()):
        digest.update(len(part).to_bytes(4, "big"))
        digest.update(part)
    digest.update(body)
    return digest.hexdigest()
