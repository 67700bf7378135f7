"""How a stored answer goes back to the client: as stored, byte for byte; a replay says so.

Owns the ``Idempotent-Replayed`` header. Used by the endpoints of every write that takes an
``Idempotency-Key``; never reads or writes a key itself.
"""

from __future__ import annotations

from typing import Final

from fastapi import Response

from app.idempotency.service import Answer
from app.metrics import IDEMPOTENT_REPLAYS

REPLAYED_HEADER: Final = "Idempotent-Replayed"
JSON: Final = "application/json"


def answered(answer: Answer) -> Response:
    headers = None
    if answer.replayed:
        IDEMPOTENT_REPLAYS.inc()
        headers = {REPLAYED_HEADER: "true"}
    return Response(answer.body, status_code=answer.status_code, media_type=JSON, headers=headers)
