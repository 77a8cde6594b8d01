"""Pure formatting for the pages: status labels and colours, times, sizes, rates.

No Streamlit here, so it is cheap to test and to reuse.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Literal

from s3task.record import TaskRecord, parse_iso
from s3task.states import State

#: Readable label and a colour (Streamlit badge colour names) per lifecycle state (``s3task.states.State``).
#: The badge colours Streamlit has.
BadgeColor = Literal["red", "orange", "yellow", "blue", "green", "violet", "gray"]

STATUS_STYLE: dict[State, tuple[str, BadgeColor]] = {
    State.CREATED: ("Waiting for upload", "gray"),
    State.QUEUED: ("Queued", "orange"),
    State.RUNNING: ("Running", "blue"),
    State.COMPLETED: ("Completed", "green"),
    State.FAILED: ("Failed, will retry", "red"),
    State.FAILED_FOR_GOOD: ("Failed", "red"),
    State.ABANDONED: ("Cancelled", "gray"),
}

#: CSS colours for the same statuses, for table pills.
STATUS_CSS = {"gray": "#9aa0a6", "orange": "#f0a020", "blue": "#3b82f6", "green": "#22a06b", "red": "#e5484d"}


def status_label(record: TaskRecord) -> str:
    return STATUS_STYLE[record.state][0]


def status_color(record: TaskRecord) -> BadgeColor:
    return STATUS_STYLE[record.state][1]


def is_live(record: TaskRecord) -> bool:
    """Will this record change without anyone clicking? (worth refreshing)"""
    return record.state.live


def ago(stamp: str | datetime | None, now: datetime) -> str:
    """'just now', '5 min ago', '3 h ago', '2 days ago'."""
    when = parse_iso(stamp) if isinstance(stamp, str) or stamp is None else stamp
    if when is None:
        return ""
    seconds = (now - when).total_seconds()
    if seconds < 0:
        return "in " + duration(-seconds)
    if seconds < 45:
        return "just now"
    return duration(seconds) + " ago"


def duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400 * 2:
        hours, rest = divmod(seconds, 3600)
        return f"{hours:.0f} h {rest / 60:.0f} min" if hours < 10 else f"{hours:.0f} h"
    return f"{seconds / 86400:.0f} days"


def local_time(stamp: str | None, tz: str | None = None) -> str:
    """An ISO stamp as 'YYYY-MM-DD HH:MM:SS' in the browser's time zone (UTC if unknown)."""
    when = parse_iso(stamp)
    if when is None:
        return ""
    label = "UTC"
    if tz:
        try:
            from zoneinfo import ZoneInfo

            when = when.astimezone(ZoneInfo(tz))
            label = when.tzname() or tz
        except (KeyError, ValueError, OSError):
            pass
    return f"{when:%Y-%m-%d %H:%M:%S} {label}"


def size(n: int | None) -> str:
    if n is None:
        return ""
    value = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} bytes"


def done_in(seconds: float | None) -> str:
    """How long a finished task took: "less than a second", "4.2 s", then as :func:`duration`."""
    if seconds is None or seconds < 1:
        return "less than a second"
    if seconds < 10:
        return f"{seconds:.1f} s"
    return duration(seconds)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """A count and its noun in the form it takes: "1 row", "0 rows", "1,200 rows"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def running_text(record: TaskRecord, now: datetime) -> str:
    """The text on a running task's bar: share done, rows read, speed and time left (as far as known)."""
    text = f"{record.progress:.0%} · {counted(record.processed_count, 'row')} read"
    rate = rows_per_second(record, now)
    if rate and rate >= 1:  # below one a second, "0 rows/s" would say it is not moving
        text += f" · {rate:,.0f} rows/s"
    left = time_left(record, now)
    if left is not None:
        text += f" · about {duration(left.total_seconds())} left"
    return text


def elapsed_seconds(record: TaskRecord, now: datetime) -> float | None:
    started = parse_iso(record.started_at)
    if started is None:
        return None
    end = parse_iso(record.finished_at) if record.status == "completed" else None
    return max(0.0, ((end or now) - started).total_seconds())


def rows_per_second(record: TaskRecord, now: datetime) -> float | None:
    elapsed = elapsed_seconds(record, now)
    if not elapsed or elapsed < 1 or not record.processed_count:
        return None
    return record.processed_count / elapsed


def time_left(record: TaskRecord, now: datetime) -> timedelta | None:
    """Estimate from the exact byte progress: elapsed × (1 - p) / p."""
    if record.status != "running":
        return None
    elapsed = elapsed_seconds(record, now)
    p = record.progress
    if elapsed is None or elapsed < 2 or p <= 0.01 or p >= 1:
        return None
    return timedelta(seconds=elapsed * (1 - p) / p)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>:$&=\"'^%@/])")
_WORD_JOINER = "\u2060"  # invisible; stops bare URLs and e-mail addresses turning into links


def plain(text: object) -> str:
    """Make user text (task names, errors) safe where Streamlit renders Markdown.

    Every ASCII punctuation character gets a backslash, which CommonMark turns
    back into the literal character: no emphasis, links, HTML, math, colour
    directives or icons. GitHub-style autolinks are found in the text after
    that, so an invisible word joiner after ``:``, ``@`` and ``www`` breaks
    ``https://…``, ``www.…`` and ``name@host`` as well.
    """
    escaped = _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")
    escaped = re.sub(r"(\\[:@])", r"\1" + _WORD_JOINER, escaped)
    return re.sub(r"(?i)(www)(?=\\\.)", r"\1" + _WORD_JOINER, escaped)
