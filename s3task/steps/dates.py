"""Dates and numbers as people write them, read exactly: a cell that does not fit is an error, never a guess.

A date format is written with ``DD``/``D`` (day), ``MM``/``M`` (month), ``YYYY``/``YY`` (year) and the
characters between them. Reading checks the calendar too (31/02 is not a date; Arrow's own ``strptime``
would roll it over into March). Two-digit years follow Python's rule: 69–99 are 1969–1999, 00–68 are
2000–2068. Detection tries the formats in :data:`DETECTED` on the column's first block; when both a
day-first and a month-first format fit every value (01/02/2024 could be either), it asks rather than picks.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from .spec import StepError

if TYPE_CHECKING:
    import pyarrow as pa

ISO_DATE_FORMAT = "YYYY-MM-DD"
_TOKEN = re.compile(r"YYYY|YY|MM|M|DD|D")
_GROUPS = {"YYYY": r"(?P<y>\d{4})", "YY": r"(?P<y>\d{2})", "MM": r"(?P<m>\d{2})", "M": r"(?P<m>\d{1,2})",
           "DD": r"(?P<d>\d{2})", "D": r"(?P<d>\d{1,2})"}  # fmt: skip
_STRFTIME = {"YYYY": "%Y", "YY": "%y", "MM": "%m", "M": "%m", "DD": "%d", "D": "%d"}

#: The formats detection tries: day first, month first, year first, with the usual separators.
DETECTED = (
    "YYYY-MM-DD", "D/M/YYYY", "M/D/YYYY", "D.M.YYYY", "D-M-YYYY", "M-D-YYYY", "YYYY/MM/DD",
    "D/M/YY", "M/D/YY", "D.M.YY",
)  # fmt: skip


def check_format(where: str, fmt: str) -> None:
    tokens = _TOKEN.findall(fmt)
    kinds = sorted(t[0] for t in tokens)
    if kinds != ["D", "M", "Y"]:
        raise StepError(
            f"{where}: {fmt!r} is not a date format: it needs DD, MM and YYYY (or YY) once each, e.g. DD/MM/YYYY"
        )
    rest = _TOKEN.sub("", fmt)
    if re.search(r"[A-Za-z0-9]", rest):
        raise StepError(f"{where}: {fmt!r} has letters or digits other than DD, MM, YYYY, YY")


def _regex(fmt: str) -> str:
    out, at = [], 0
    for m in _TOKEN.finditer(fmt):
        out.append(re.escape(fmt[at : m.start()]))
        out.append(_GROUPS[m.group()])
        at = m.end()
    out.append(re.escape(fmt[at:]))
    return "^" + "".join(out) + "$"


def _strftime(fmt: str) -> str:
    return _TOKEN.sub(lambda m: _STRFTIME[m.group()], fmt.replace("%", "%%"))


def read_dates(column: pa.ChunkedArray | pa.Array, fmt: str) -> tuple[pa.Array, pa.Array]:
    """The cells read as dates in ``fmt``: (timestamps, which non-empty cells are not such a date)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.utf8_trim_whitespace(column)
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    parts = pc.extract_regex(text, _regex(fmt))  # null where the shape does not fit
    shaped = pc.is_valid(parts)
    filled = pc.if_else(shaped, parts, pa.scalar({"y": "1970", "m": "1", "d": "1"}, parts.type))
    year = pc.cast(pc.struct_field(filled, "y"), pa.int32())
    if "YYYY" not in fmt:
        year = pc.add(year, pc.if_else(pc.less(year, 69), 2000, 1900))
    month = pc.cast(pc.struct_field(filled, "m"), pa.int32())
    day = pc.cast(pc.struct_field(filled, "d"), pa.int32())
    y, m, d = (np.asarray(a.to_numpy(zero_copy_only=False)) for a in (year, month, day))
    ok = (m >= 1) & (m <= 12) & (d >= 1) & (d <= _days_in_month(y, m)) & (y >= 1)
    stamps = pa.array(_epoch_days(y, m, d), pa.int32()).cast(pa.date32())
    good = pc.and_(shaped, pa.array(ok))
    empty = pc.equal(text, "")
    bad = pc.and_(pc.invert(good), pc.invert(empty))
    return pc.if_else(good, stamps, pa.scalar(None, pa.date32())), bad


def write_dates(dates: pa.Array, fmt: str) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.strftime(dates.cast(pa.timestamp("s")), format=_strftime(fmt)).cast(pa.large_string())


def _days_in_month(years: Any, months: Any) -> Any:
    import numpy as np

    y, m = np.asarray(years), np.clip(np.asarray(months), 1, 12)
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[m]
    return days + ((m == 2) & leap)


def _epoch_days(y: object, m: object, d: object) -> object:
    """Days since 1970-01-01 of valid (y, m, d), by the civil-from-days algorithm (no Python loop)."""
    import numpy as np

    y, m, d = (np.asarray(a, dtype=np.int64) for a in (y, m, d))
    m = np.clip(m, 1, 12)
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + np.clip(d, 1, 31) - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return (era * 146097 + doe - 719468).astype(np.int32)


def detect(column: pa.ChunkedArray | pa.Array, where: str) -> str:
    """The one format in :data:`DETECTED` every non-empty cell fits; asks when day and month could swap."""
    import pyarrow.compute as pc

    text = pc.utf8_trim_whitespace(column)
    values = text.filter(pc.not_equal(text, ""))
    if len(values) == 0:
        return "YYYY-MM-DD"  # nothing to read: the step changes nothing
    bads = [read_dates(values, f)[1] for f in DETECTED]
    fits = [f for f, bad in zip(DETECTED, bads, strict=True) if not pc.any(bad).as_py()]
    if not fits:
        nowhere = values.filter(functools.reduce(pc.and_, bads))  # the cells no format reads (e.g. 31/02/2024)
        sample = (nowhere if len(nowhere) else values)[0].as_py()
        raise StepError(
            f"{where}: no one date format fits every cell (e.g. {sample!r}); say the format the dates are in"
        )
    if len(fits) > 1:
        raise StepError(
            f"{where}: the dates could be {' or '.join(fits[:2])} (e.g. {values[0].as_py()!r}); say which the file uses"
        )
    return fits[0]


# --- numbers ------------------------------------------------------------------------------

_GROUPING = "[ \u00a0\u202f\u2009']"  # spaces (plain, no-break, thin) and apostrophes group thousands


def plain_numbers(column: pa.ChunkedArray | pa.Array, decimal: str) -> tuple[pa.Array, pa.Array]:
    """Cells as plain numbers (``1234.5``): (new cells, which non-empty cells are not numbers)."""
    import pyarrow.compute as pc

    text = pc.utf8_trim_whitespace(column)
    group = r"\." if decimal == "," else ","
    mark = "," if decimal == "," else r"\."
    digits = rf"\d{{1,3}}(?:{group}\d{{3}})+|\d{{1,3}}(?:{_GROUPING}\d{{3}})+|\d+"
    shape = rf"^[+-]?(?:{digits})(?:{mark}\d+)?$|^[+-]?{mark}\d+$"
    ok = pc.match_substring_regex(text, shape)
    plain = pc.replace_substring_regex(text, f"{_GROUPING}|{group}", "")
    if decimal == ",":
        plain = pc.replace_substring(plain, ",", ".")
    plain = pc.replace_substring_regex(plain, r"^\+", "")
    plain = pc.replace_substring_regex(plain, r"^(-?)\.", r"\10.")
    bad = pc.and_(pc.invert(ok), pc.not_equal(text, ""))
    return pc.if_else(ok, plain, column), bad
