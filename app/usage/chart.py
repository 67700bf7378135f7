"""The geometry of the ``/ui/usage`` chart: one bar per UTC day, tokens in under tokens out.

Pure: the page renders the bars as inline SVG (no script, nothing fetched from elsewhere).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta

WIDTH = 720
HEIGHT = 200
LEFT = 48
"""Room for the axis labels left of the bars."""
BOTTOM = 20
"""Room for the day labels under the bars."""


@dataclass(frozen=True, slots=True)
class Bar:
    day: date
    x: float
    width: float
    input_tokens: int
    output_tokens: int
    input_y: float
    input_height: float
    output_y: float
    output_height: float
    labelled: bool
    """Whether the day's label is drawn under it (about one in seven when there are many)."""


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: int
    plot_height: int
    peak: int
    bars: tuple[Bar, ...]


def daily_tokens(
    first: date, last: date, rows: Iterable[tuple[date, int, int]]
) -> list[tuple[date, int, int]]:
    """Every day from ``first`` to ``last`` with its tokens in and out (0 for a day without)."""
    totals: dict[date, tuple[int, int]] = {}
    for day, tokens_in, tokens_out in rows:
        before_in, before_out = totals.get(day, (0, 0))
        totals[day] = (before_in + tokens_in, before_out + tokens_out)
    days = [first + timedelta(days=offset) for offset in range((last - first).days + 1)]
    return [(day, *totals.get(day, (0, 0))) for day in days]


def chart(days: list[tuple[date, int, int]]) -> Chart:
    """Bars scaled so the busiest day fills the plot's height."""
    plot_height = HEIGHT - BOTTOM
    peak = max((tokens_in + tokens_out for _, tokens_in, tokens_out in days), default=0)
    slot = (WIDTH - LEFT) / max(1, len(days))
    every = max(1, round(len(days) / 7))
    bars: list[Bar] = []
    for index, (day, tokens_in, tokens_out) in enumerate(days):
        scale = plot_height / peak if peak else 0.0
        input_height = tokens_in * scale
        output_height = tokens_out * scale
        bars.append(
            Bar(
                day=day,
                x=round(LEFT + index * slot + slot * 0.1, 2),
                width=round(max(1.0, slot * 0.8), 2),
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                input_y=round(plot_height - input_height, 2),
                input_height=round(input_height, 2),
                output_y=round(plot_height - input_height - output_height, 2),
                output_height=round(output_height, 2),
                labelled=index % every == 0,
            )
        )
    return Chart(WIDTH, HEIGHT, LEFT, plot_height, peak, tuple(bars))
