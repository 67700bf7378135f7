"""The receipt's pure parts: canonical bytes, the user's digest, signing and verifying, reading
a public key in each form it is given, and the order tables are emptied in."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key

from app.lifecycle import receipts
from app.lifecycle.erasure_repository import ordered_for_deletion

TENANT = uuid.UUID("6574ed4c-8090-4fa0-bed9-4327ec81f5df")
BODY: dict[str, Any] = {
    "format": receipts.FORMAT,
    "erasure_id": "e",
    "tenant_id": str(TENANT),
    "user_id_sha256": receipts.user_digest(TENANT, "carol"),
    "removed": {"messages": 3, "agent_sessions": 1},
    "rows_removed": 4,
    "note": "zürich",
}


@pytest.fixture(scope="module")
def pair() -> tuple[bytes, bytes]:
    return receipts.new_key_pair()


def test_the_digest_is_of_tenant_and_user_and_names_neither() -> None:
    digest = receipts.user_digest(TENANT, "carol")
    assert digest == hashlib.sha256(f"{TENANT}:carol".encode()).hexdigest()
    assert digest != receipts.user_digest(uuid.uuid4(), "carol")
    assert digest != receipts.user_digest(TENANT, "carol ")


def test_canonical_bytes_sort_keys_keep_unicode_and_drop_spaces() -> None:
    assert receipts.canonical({"b": 1, "a": {"d": "ü", "c": None}}) == (
        '{"a":{"c":null,"d":"ü"},"b":1}'.encode()
    )


def test_a_signed_receipt_verifies_through_json(pair: tuple[bytes, bytes]) -> None:
    private, public = pair
    signed = receipts.sign(BODY, private)
    assert signed["signature"]["key_id"] == receipts.key_id_of(public)
    assert len(receipts.key_id_of(public)) == 16
    receipts.verify(json.loads(json.dumps(signed, indent=3)), public)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda r: {**r, "rows_removed": 5}, "does not verify"),
        (lambda r: {**r, "removed": {**r["removed"], "messages": 2}}, "does not verify"),
        (lambda r: {**r, "extra": 1}, "does not verify"),
        (lambda r: {k: v for k, v in r.items() if k != "note"}, "does not verify"),
        (lambda r: {**r, "format": "other/1"}, "not an erasure receipt"),
        (lambda r: {k: v for k, v in r.items() if k != "signature"}, "no Ed25519 signature"),
        (lambda r: {**r, "signature": {**r["signature"], "algorithm": "HS256"}}, "no Ed25519"),
        (lambda r: {**r, "signature": {**r["signature"], "value": "%%%"}}, "not base64"),
        (lambda r: {**r, "signature": {**r["signature"], "value": "AAAA"}}, "does not verify"),
        (lambda r: [r], "not an erasure receipt"),
    ],
)
def test_a_changed_receipt_fails_saying_why(
    pair: tuple[bytes, bytes], change: Any, says: str
) -> None:
    private, public = pair
    with pytest.raises(receipts.ReceiptInvalid, match=says):
        receipts.verify(change(receipts.sign(BODY, private)), public)


def test_another_key_does_not_verify(pair: tuple[bytes, bytes]) -> None:
    private, _ = pair
    _, other = receipts.new_key_pair()
    with pytest.raises(receipts.ReceiptInvalid, match=receipts.key_id_of(other)):
        receipts.verify(receipts.sign(BODY, private), other)


def test_a_public_key_is_read_in_each_form(pair: tuple[bytes, bytes]) -> None:
    _, public = pair
    pem = receipts.public_key_pem(public)
    raw = base64.b64encode(public).decode()
    for given in (
        pem,
        f"\n{pem}\n",
        raw,
        json.dumps({"public_key": raw, "pem": pem}),
        json.dumps({"public_key": pem}),
    ):
        assert receipts.load_public_key(given) == public


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (base64.b64encode(b"\0" * 31).decode(), "is 32 bytes, not 31"),
        (base64.b64encode(b"\0" * 33).decode(), "is 32 bytes, not 33"),
        ("not a key!", "neither PEM, JSON nor base64"),
        ("{not json", "not valid JSON"),
        ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", "not a valid PEM"),
        (
            generate_private_key(SECP256R1())
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode(),
            "not an Ed25519 key",
        ),
    ],
)
def test_what_is_not_an_ed25519_public_key_is_refused(given: str, says: str) -> None:
    with pytest.raises(receipts.ReceiptInvalid, match=says):
        receipts.load_public_key(given)


@pytest.mark.parametrize(
    ("tables", "references", "ordered"),
    [
        ([], [], []),
        (["a"], [], ["a"]),
        (["parent", "child"], [("child", "parent")], ["child", "parent"]),
        (["a", "b", "c"], [("b", "a"), ("c", "b")], ["c", "b", "a"]),
        # A reference to a table outside the set orders nothing.
        (["b", "a"], [("a", "elsewhere")], ["a", "b"]),
        # A cycle cannot be ordered: what is left goes in name order.
        (["x", "y"], [("x", "y"), ("y", "x")], ["x", "y"]),
    ],
)
def test_tables_referring_to_others_are_emptied_first(
    tables: list[str], references: list[tuple[str, str]], ordered: list[str]
) -> None:
    assert ordered_for_deletion(tables, references) == ordered
