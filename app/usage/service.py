"""The tenant's model usage by UTC day and model, over a range of days it asked for.

Checks the range (``from`` after ``to``, or longer than ``MAX_DAYS``, is a 422) and adds up the
totals; the endpoint owns the transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import InvalidInput
from app.tenancy.principal import Principal
from app.usage.repository import DayModel, by_day_and_model

MAX_DAYS = 366
DEFAULT_DAYS = 30


@dataclass(frozen=True, slots=True)
class DayRange:
    first: date
    last: date

    @classmethod
    def of(cls, first: date | None, last: date | None, *, today: date) -> DayRange:
        """The days asked for: ``last`` defaults to today, ``first`` to 29 days before it."""
        last = last or today
        first = first or last - timedelta(days=DEFAULT_DAYS - 1)
        if first > last:
            raise InvalidInput(
                "from is after to",
                errors=[{"loc": ["query", "from"], "msg": "must not be after to"}],
            )
        if (last - first).days + 1 > MAX_DAYS:
            raise InvalidInput(
                f"the range is longer than {MAX_DAYS} days",
                errors=[{"loc": ["query", "from"], "msg": f"at most {MAX_DAYS} days before to"}],
            )
        return cls(first, last)

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first, time(), tzinfo=UTC)

    @property
    def end(self) -> datetime:
        """The start of the day after ``last`` (the range is half open)."""
        return datetime.combine(self.last + timedelta(days=1), time(), tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Usage:
    days: DayRange
    rows: list[DayModel]


class UsageService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal

    async def by_day_and_model(self, days: DayRange) -> Usage:
        rows = await by_day_and_model(self.db, self.principal.tenant_id, days.start, days.end)
        return Usage(days, rows)


def today() -> date:
    return datetime.now(UTC).date()
