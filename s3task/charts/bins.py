"""Where a histogram's bars start and end: round widths for numbers, calendar units for dates.

Numbers get at most about :data:`TARGET_BARS` bars (at least half as many, unless whole numbers span
fewer) of a round width (1, 2, 2.5 or 5 times a power of ten; whole numbers never narrower than 1, nor 2.5
wide), the first starting at a multiple of the width at or below the smallest value. Dates get a bar per
day when the values span under :data:`DAY_SPAN` days, per month when they span under :data:`MONTH_SPAN`
months, else per year (or per 2, 5, 10… years, at most :data:`TARGET_BARS` bars). A date-time counts on
its day.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

TARGET_BARS = 20
#: Values spanning fewer days than this get a bar per day.
DAY_SPAN = 92
#: Else, values spanning fewer months than this get a bar per month; more, per year(s).
MONTH_SPAN = 72


@dataclass(frozen=True)
class NumberBins:
    """``count`` bars of width ``width`` from ``start``: bar i holds the values from start + i·width up to
    start + (i+1)·width (that end left out, but for the last bar of numbers that are not all whole)."""

    start: float
    width: float
    count: int

    def edges(self) -> list[float]:
        digits = max(0, 2 - math.floor(math.log10(self.width)))
        return [round(self.start + i * self.width, digits) for i in range(self.count + 1)]

    def index(self, values: np.ndarray) -> np.ndarray:
        import numpy as np

        found = np.floor((values.astype(np.float64) - self.start) / self.width).astype(np.int64)
        return np.clip(found, 0, self.count - 1)


def number_bins(low: float, high: float, *, whole: bool) -> NumberBins:
    """The bars for values from ``low`` to ``high`` (``whole``: every value a whole number)."""
    span = high - low
    if span <= 0:
        return NumberBins(float(low), 1.0, 1)
    raw = span / TARGET_BARS
    power = 10.0 ** math.floor(math.log10(raw))
    steps = (1, 2, 5, 10) if whole else (1, 2, 2.5, 5, 10)
    width = next(m * power for m in steps if m * power >= raw * (1 - 1e-12))
    if whole:
        width = max(1.0, float(round(width)))
    start = math.floor(low / width) * width
    # Whole numbers: each bar holds the whole numbers from its start, up to its end left out. Other numbers: the
    # last bar holds its end too (so 0.5 to 1,200 is 12 bars of 100, not 13 with the last holding 1,200 alone).
    bars = math.floor((high - start) / width) + 1 if whole else math.ceil((high - start) / width)
    count = max(1, bars)
    return NumberBins(start, width, min(count, 2 * TARGET_BARS + 1))


@dataclass(frozen=True)
class DateBins:
    """Bars of ``step`` ``unit`` (``day``, ``month`` or ``year``) from ``first`` (a count of that unit since
    1970-01-01, as numpy counts it), ``count`` of them."""

    unit: str
    step: int
    first: int
    count: int

    def index(self, values: np.ndarray) -> np.ndarray:
        """The bar of each value (numpy ``datetime64`` of any unit)."""
        import numpy as np

        code = {"day": "D", "month": "M", "year": "Y"}[self.unit]
        units = values.astype(f"datetime64[{code}]").astype(np.int64)
        return np.clip((units - self.first) // self.step, 0, self.count - 1)

    def bounds(self) -> list[tuple[str, str, str]]:
        """Each bar's first day, the day after its last (ISO dates) and its label."""
        import numpy as np

        code: Any = {"day": "D", "month": "M", "year": "Y"}[self.unit]
        out = []
        for i in range(self.count):
            begin = np.datetime64(self.first + i * self.step, code)
            end = np.datetime64(self.first + (i + 1) * self.step, code)
            label = str(begin)
            if self.unit == "year" and self.step > 1:
                label = f"{begin}–{np.datetime64(self.first + (i + 1) * self.step - 1, code)}"
            out.append((str(begin.astype("datetime64[D]")), str(end.astype("datetime64[D]")), label))
        return out


def date_bins(low: np.datetime64, high: np.datetime64) -> DateBins:
    """The bars for dates (or date-times) from ``low`` to ``high``."""
    import numpy as np

    days = int(high.astype("datetime64[D]").astype(np.int64) - low.astype("datetime64[D]").astype(np.int64))
    if days < DAY_SPAN:
        return DateBins("day", 1, int(low.astype("datetime64[D]").astype(np.int64)), days + 1)
    first_month = int(low.astype("datetime64[M]").astype(np.int64))
    months = int(high.astype("datetime64[M]").astype(np.int64)) - first_month
    if months < MONTH_SPAN:
        return DateBins("month", 1, first_month, months + 1)
    first_year = int(low.astype("datetime64[Y]").astype(np.int64))
    last_year = int(high.astype("datetime64[Y]").astype(np.int64))
    step = max(1, math.ceil(number_bins(first_year, last_year + 1, whole=True).width))
    if (last_year - first_year) // step + 1 > TARGET_BARS * 2:
        step = math.ceil((last_year - first_year + 1) / TARGET_BARS)
    start = first_year - (first_year + 1970) % step if step > 1 else first_year  # 1990, not 1987, for decades
    return DateBins("year", step, start, (last_year - start) // step + 1)
