"""Column types shared by the tables."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from sqlalchemy import DateTime, func
from sqlalchemy.orm import mapped_column

CreatedAt = Annotated[datetime, mapped_column(DateTime(timezone=True), server_default=func.now())]
