"""A column's summary over every row, kept as a small JSON object, and said in words."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: Changes when the summary's content or shape does, so an older summary in the store is never read as a newer.
VERSION = 2
Kind = Literal["number", "date", "text"]


@dataclass(frozen=True)
class Bar:
    """One bar: its label and how many rows it counts. A histogram's bar also has its ``start`` and ``end``
    (numbers, or ISO dates: ``end`` is the day after its last); a text bar has neither."""

    label: str
    count: int
    start: float | str | None = None
    end: float | str | None = None


@dataclass(frozen=True)
class ColumnSummary:
    """One column of a result, counted over every row.

    ``kind`` follows the Parquet copy's type of the column (``type``: its rule, :mod:`s3task.exports.parquet`):
    ``int64`` and ``float64`` are numbers, ``date32`` and ``timestamp`` dates, ``bool`` and ``string`` text.
    ``rows`` and ``empty`` count every row; ``low`` and ``high`` are the smallest and largest filled values
    (numbers, or ISO text for dates). ``unit`` is a histogram's bar width in words (``day``, ``month``,
    ``5 years``, ``0.5``). A text summary's ``bars`` are its most common values, most common first; ``others``
    counts the filled cells with any other value, and ``distinct`` the different values (``approximate``:
    beyond what is counted exactly, an estimate). A text bar's count is always exact; ``unseen_at_most``, when
    not 0, is the most rows a value without a bar may have, more than the last bar's: the bars are then the most
    common values found, not surely the most common (:mod:`.text`).
    """

    column: str
    kind: Kind
    type: str
    rows: int
    empty: int
    low: float | str | None = None
    high: float | str | None = None
    unit: str = ""
    bars: tuple[Bar, ...] = field(default_factory=tuple)
    others: int = 0
    distinct: int | None = None
    approximate: bool = False
    unseen_at_most: int = 0

    @property
    def filled(self) -> int:
        return self.rows - self.empty

    def to_json(self) -> bytes:
        data = asdict(self)
        data["version"] = VERSION
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_json(cls, body: bytes) -> ColumnSummary:
        data: dict[str, Any] = json.loads(body)
        data.pop("version", None)
        data["bars"] = tuple(Bar(**bar) for bar in data.get("bars", ()))
        return cls(**data)


def digest(column: str) -> str:
    """The part of a summary's key that names its column (any text) and the summary's version."""
    return hashlib.sha256(f"v{VERSION}\0{column}".encode()).hexdigest()[:24]


def number(value: float | int | str | None) -> str:
    """A number as the page says it: thousands separated, six significant digits at most (``1,200``, ``0.5``)."""
    if value is None or isinstance(value, str):
        return str(value or "")
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.6g}"


def describe(summary: ColumnSummary) -> str:
    """The summary in one sentence, as a screen reader reads it:
    ``price: 12,004 rows, 31 empty, from 0.5 to 1,200``."""
    said = [f"{summary.column}: {_rows(summary.rows)}", f"{summary.empty:,} empty"]
    if summary.kind in ("number", "date") and summary.filled:
        low, high = number(summary.low), number(summary.high)
        said.append(f"all {low}" if low == high else f"from {low} to {high}")
    elif summary.kind == "text" and summary.filled:
        about = "about " if summary.approximate else ""
        said.append(f"{about}{_counted(summary.distinct or 0, 'different value')}")
    return ", ".join(said)


def bars_in_words(summary: ColumnSummary) -> str:
    """Every bar's count, in the chart's order (what the chart shows, for whoever cannot see it)."""
    if not summary.filled:
        return "Every cell of this column is empty."
    if summary.kind == "text":
        parts = [f"“{bar.label}” {bar.count:,}" for bar in summary.bars]
        if summary.others:
            parts.append(f"all other values {summary.others:,}")
        lead = "Most common values"
        if summary.unseen_at_most:
            lead = f"Most common values found (a value not shown may have up to {_rows(summary.unseen_at_most)})"
        return f"{lead}: " + "; ".join(parts) + "."
    if summary.kind == "date":
        parts = [f"{bar.label}: {bar.count:,}" for bar in summary.bars if bar.count]
        lead = f"Rows per {summary.unit}"
    else:
        parts = [f"{number(bar.start)} to {number(bar.end)}: {bar.count:,}" for bar in summary.bars if bar.count]
        lead = f"Rows per range of {summary.unit}"
    none = sum(1 for bar in summary.bars if not bar.count)
    rest = f" ({none:,} of the {len(summary.bars):,} bars have no rows)" if none else ""
    return f"{lead}{rest}: " + "; ".join(parts) + "."


def _rows(n: int) -> str:
    return _counted(n, "row")


def _counted(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")
