"""The Standard Webhooks headers of one delivery attempt: ``webhook-id``, ``webhook-timestamp``
and ``webhook-signature`` (HMAC-SHA256 of ``id.timestamp.body`` with the endpoint's secret),
computed by the ``standardwebhooks`` package.

Owns making a secret and signing a body. Never sends anything.
"""

from __future__ import annotations

import base64
import secrets
from datetime import datetime

from standardwebhooks import Webhook

SECRET_PREFIX = "whsec_"  # noqa: S105 - the format's prefix, not a secret
SECRET_BYTES = 32


def new_secret() -> str:
    """A signing secret in the Standard Webhooks form: ``whsec_`` and base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def signed_headers(secret: str, message_id: str, sent_at: datetime, body: str) -> dict[str, str]:
    """The headers of one attempt; ``sent_at`` is the attempt's own time (receivers refuse a
    timestamp more than five minutes off, so a retry is signed anew)."""
    signature = Webhook(secret).sign(msg_id=message_id, timestamp=sent_at, data=body)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(sent_at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
        "user-agent": "workmem-webhooks",
    }
