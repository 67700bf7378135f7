"""The data lifecycle's requests: redacting a message, erasing a user, the receipts' key.

Pure, like ``calls``: each function returns a ``Call``; the sync and async clients send them.
"""

from __future__ import annotations

import uuid
from urllib.parse import quote

from workmem_client.call import Call, body, reads
from workmem_client.models import ErasureReceipt, ReceiptPublicKey, RedactionRead

Id = uuid.UUID | str


def redact(agent_session_id: Id, seq: int, *, reason: str | None = None) -> Call[RedactionRead]:
    """Replace a message's content with ``[redacted]`` everywhere it is stored or indexed
    (live or archived), keeping its seq and role; ``reason`` is kept with the redaction (never
    put the secret itself there)."""
    return Call(
        "POST",
        f"/v1/sessions/{agent_session_id}/messages/{int(seq)}:redact",
        reads(RedactionRead),
        body=body(reason=reason),
    )


def erase_user(user_id: str) -> Call[ErasureReceipt]:
    """Erase everything of ``user_id`` in the tenant (an admin key not bound to a user); the
    answer is the signed receipt. ``NotFoundError`` when nothing of the user is stored."""
    return Call("DELETE", f"/v1/users/{quote(user_id, safe='')}", reads(ErasureReceipt))


def receipt_public_key() -> Call[ReceiptPublicKey]:
    """The tenant's Ed25519 public key that verifies its erasure receipts."""
    return Call("GET", "/v1/receipts/public-key", reads(ReceiptPublicKey))
