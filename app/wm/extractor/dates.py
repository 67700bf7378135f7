"""Dates of a conversation: the day a session says it is, and relative times made absolute.

Owns reading a session's day from what a system message states ("8 May, 2023", "2024-05-15")
and writing, after a relative time in a sentence said that day, the date it means: "yesterday
(7 May 2023)", "last Friday (5 May 2023)", "last week (the week before 8 May 2023)", "last
year (2022)". Pure calendar arithmetic on the stated day; never reads a clock.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Final

_MONTHS: Final = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS: Final = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
_SESSION_DAY: Final = re.compile(
    r"\b(\d{1,2})\s+(" + "|".join(_MONTHS) + r"),?\s+(\d{4})\b|\b(\d{4})-(\d{2})-(\d{2})\b"
)
_COUNT: Final = r"(\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)"
_RELATIVE: Final = re.compile(
    r"\b(?:(yesterday|last night)|(today|tonight|this (?:morning|afternoon|evening))|(tomorrow)"
    r"|(?:last|this past) (" + "|".join(_WEEKDAYS) + r")"
    r"|" + _COUNT + r" (days?|weeks?|months?|years?) ago"
    r"|(last|next) (week(?:end)?|month|year)|this (month|year|week(?:end)?)"
    r"|next (" + "|".join(_WEEKDAYS) + r"))\b",
    re.IGNORECASE,
)
# Relative times with no one date: the fact still says the day they were said.
_VAGUE: Final = re.compile(
    r"\b(?:recently|lately|ago|the other day|this (?:" + "|".join(_WEEKDAYS) + r"))\b",
    re.IGNORECASE,
)


def format_day(day: date) -> str:
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def session_day(text: str) -> date | None:
    """The first day ``text`` states (``D Month YYYY`` or ISO), or ``None``."""
    match = _SESSION_DAY.search(text)
    if match is None:
        return None
    try:
        if match.group(1):
            month = _MONTHS.index(match.group(2)) + 1
            return date(int(match.group(3)), month, int(match.group(1)))
        return date(int(match.group(4)), int(match.group(5)), int(match.group(6)))
    except ValueError:
        return None


def _month(day: date, offset: int) -> str:
    index = day.year * 12 + day.month - 1 + offset
    return f"{_MONTHS[index % 12]} {index // 12}"


def _meaning(match: re.Match[str], day: date) -> str:
    groups = match.groups()
    if groups[0]:
        return format_day(day - timedelta(days=1))
    if groups[1]:
        return format_day(day)
    if groups[2]:
        return format_day(day + timedelta(days=1))
    if groups[3]:
        back = (day.weekday() - _WEEKDAYS.index(groups[3].lower()) - 1) % 7 + 1
        return format_day(day - timedelta(days=back))
    if groups[4]:
        count = _NUMBERS.get(groups[4].lower()) or int(groups[4])
        unit = groups[5].lower().rstrip("s")
        if unit == "day":
            return format_day(day - timedelta(days=count))
        if unit == "week":
            return f"the week of {format_day(day - timedelta(weeks=count))}"
        if unit == "month":
            return _month(day, -count)
        return str(day.year - count)
    if groups[6]:
        step = -1 if groups[6].lower() == "last" else 1
        unit = groups[7].lower()
        relation = "before" if step < 0 else "after"
        if unit in ("week", "weekend"):
            return f"the {unit} {relation} {format_day(day)}"
        return _month(day, step) if unit == "month" else str(day.year + step)
    if groups[8]:
        unit = groups[8].lower()
        if unit.startswith("week"):
            return f"the {unit} of {format_day(day)}"
        return _month(day, 0) if unit == "month" else str(day.year)
    ahead = (_WEEKDAYS.index(groups[9].lower()) - day.weekday() - 1) % 7 + 1
    return format_day(day + timedelta(days=ahead))


def has_relative_time(sentence: str) -> bool:
    """A time relative to the day it was said, whether or not it names one date."""
    return _RELATIVE.search(sentence) is not None or _VAGUE.search(sentence) is not None


def resolve_relative(sentence: str, day: date) -> str:
    """``sentence`` with the absolute date after each relative time it contains."""

    return _RELATIVE.sub(lambda match: f"{match.group(0)} ({_meaning(match, day)})", sentence)
