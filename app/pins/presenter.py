"""Maps what the pin service returns (stored pins) to the response bodies of ``schemas``."""

from __future__ import annotations

from app.models import Pin as PinRow
from app.pins.schemas import PinRead


def pin_read(row: PinRow) -> PinRead:
    return PinRead.model_validate(row, from_attributes=True)
