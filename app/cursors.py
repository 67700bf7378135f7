"""Keyset cursors of the list endpoints: a row's ``(created_at, id)``, URL-safe.

Owns the one encoding every paged listing uses, and the 422 for a cursor that is not one. Never
queries anything: repositories page with the decoded key.
"""

from __future__ import annotations

import base64
import uuid
from datetime import datetime

from app.errors import InvalidInput


def encode_cursor(created_at: datetime, row_id: uuid.UUID) -> str:
    raw = f"{created_at.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created_at, row_id = raw.split("|", 1)
        return datetime.fromisoformat(created_at), uuid.UUID(row_id)
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidInput(
            "the cursor is not valid", errors=[{"loc": ["query", "cursor"], "msg": str(error)}]
        ) from error
