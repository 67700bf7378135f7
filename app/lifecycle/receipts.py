"""Erasure receipts: their canonical bytes, the user's digest, Ed25519 signing and verifying.

No I/O: keys and receipts in, receipts and verdicts out. A receipt is a JSON object; its
signature covers the canonical form (keys sorted, no spaces, UTF-8) of every other member, so
any change to a count, a time, an id or the digest breaks it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

FORMAT: Final = "workmem.erasure-receipt/1"
ALGORITHM: Final = "Ed25519"


class ReceiptInvalid(ValueError):
    """The receipt does not verify, or is not a receipt; the message is one line."""


def user_digest(tenant_id: uuid.UUID, user_id: str) -> str:
    """What a receipt and a tombstone keep of the user: SHA-256 of ``<tenant id>:<user id>``.
    The tenant, who knows the id, can recompute it; it names nobody to anyone else."""
    return hashlib.sha256(f"{tenant_id}:{user_id}".encode()).hexdigest()


def canonical(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def new_key_pair() -> tuple[bytes, bytes]:
    """A fresh (private, public) pair, raw 32 bytes each."""
    private = Ed25519PrivateKey.generate()
    return (
        private.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        ),
        _raw_public(private.public_key()),
    )


def key_id_of(public_key: bytes) -> str:
    """A short, stable name of a public key: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def public_key_pem(public_key: bytes) -> str:
    return (
        Ed25519PublicKey.from_public_bytes(public_key)
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def sign(body: Mapping[str, Any], private_key: bytes) -> dict[str, Any]:
    """The receipt: ``body`` with a ``signature`` member over its canonical form."""
    key = Ed25519PrivateKey.from_private_bytes(private_key)
    value = key.sign(canonical(body))
    return {
        **body,
        "signature": {
            "algorithm": ALGORITHM,
            "key_id": key_id_of(_raw_public(key.public_key())),
            "value": base64.b64encode(value).decode(),
        },
    }


def verify(receipt: object, public_key: bytes) -> None:
    """Raise ``ReceiptInvalid`` unless ``receipt`` is a receipt signed by ``public_key``."""
    if not isinstance(receipt, Mapping) or receipt.get("format") != FORMAT:
        raise ReceiptInvalid(f'not an erasure receipt (no "format": "{FORMAT}")')
    signature = receipt.get("signature")
    if not isinstance(signature, Mapping) or signature.get("algorithm") != ALGORITHM:
        raise ReceiptInvalid(f"the receipt carries no {ALGORITHM} signature")
    try:
        value = base64.b64decode(str(signature.get("value", "")), validate=True)
    except (binascii.Error, ValueError):
        raise ReceiptInvalid("the receipt's signature is not base64") from None
    body = {key: item for key, item in receipt.items() if key != "signature"}
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(value, canonical(body))
    except InvalidSignature:
        raise ReceiptInvalid(
            "the signature does not verify: the receipt was changed after signing, "
            f"or key {key_id_of(public_key)} did not sign it"
        ) from None


def load_public_key(text: str) -> bytes:
    """A public key as given: a PEM block, the JSON of ``GET /v1/receipts/public-key``, or the
    raw key in base64."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            document = json.loads(stripped)
        except ValueError:
            raise ReceiptInvalid("the public key file is not valid JSON") from None
        stripped = str(document.get("public_key", "")) if isinstance(document, dict) else ""
    if stripped.startswith("-----BEGIN"):
        try:
            loaded = serialization.load_pem_public_key(stripped.encode())
        except ValueError:
            raise ReceiptInvalid("the public key is not a valid PEM block") from None
        if not isinstance(loaded, Ed25519PublicKey):
            raise ReceiptInvalid(f"the public key is not an {ALGORITHM} key")
        return _raw_public(loaded)
    try:
        raw = base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        raise ReceiptInvalid("the public key is neither PEM, JSON nor base64") from None
    if len(raw) != 32:
        raise ReceiptInvalid(f"an {ALGORITHM} public key is 32 bytes, not {len(raw)}")
    return raw


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
