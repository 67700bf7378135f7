"""API key format ``wm_<prefix>_<secret>``: generation, parsing and hashing.

Only ``sha256(secret)`` is stored; the plaintext key exists once, in the response that issues it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_KEY_PATTERN = re.compile(r"^wm_([a-z0-9]{8})_([a-z0-9]{40})$")


@dataclass(frozen=True, slots=True)
class IssuedKey:
    prefix: str
    secret: str

    @property
    def plaintext(self) -> str:
        return f"wm_{self.prefix}_{self.secret}"

    @property
    def secret_sha256(self) -> str:
        return hash_secret(self.secret)


def _random_text(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def generate_key() -> IssuedKey:
    return IssuedKey(prefix=_random_text(8), secret=_random_text(40))


def parse_key(token: str) -> IssuedKey | None:
    match = _KEY_PATTERN.match(token.strip())
    if match is None:
        return None
    return IssuedKey(prefix=match.group(1), secret=match.group(2))


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(secret: str, stored_sha256: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_sha256)
