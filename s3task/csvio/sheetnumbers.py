"""How a cell's number is shown: the kind of its number format (a date, a time, a percentage, a code of
zeros, or General), and the numbers of a piece rendered as Excel shows them (see :mod:`.sheetcells`)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidInput
from .common import TEXT

AGAIN = "open it in Excel, save it as 'Excel Workbook (.xlsx)' and upload it again"

# How a cell's number is shown, by the kind of its number format.
GENERAL, DATE, DATETIME, TIME, PERCENT, CODE = range(6)
# Excel's built-in number formats that are not General-like (ECMA-376 §18.8.30).
_BUILTIN = {9: "0%", 10: "0.00%", 14: "yyyy-mm-dd", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy", 18: "h:mm AM/PM"}
_BUILTIN |= {19: "h:mm:ss AM/PM", 20: "h:mm", 21: "h:mm:ss", 22: "m/d/yy h:mm", 45: "mm:ss", 46: "[h]:mm:ss"}
_BUILTIN |= {47: "mmss.0", 27: "yyyy-mm-dd", 30: "m/d/yy", 36: "yyyy-mm-dd", 50: "yyyy-mm-dd", 57: "yyyy-mm-dd"}


@dataclass(frozen=True)
class Style:
    kind: int
    code: str = ""  # for CODE: the format, e.g. 00000 or 000-00-0000


def style_of(code: str) -> Style:
    """Classify a number format code by what it does to the shown value."""
    section = code.split(";")[0]  # the format of positive numbers
    bare = re.sub(r'"[^"]*"|\\.|_.|\*.', "", section)  # quoted text, escaped and spacing characters
    if re.match(r"\s*\[[hms]+\]", bare, re.I):
        return Style(GENERAL)  # elapsed time (a duration), not a time of day
    lowered = re.sub(r"\[[^\]]*\]", "", bare).lower()  # colours, locales, conditions
    if lowered.strip() in ("general", "@", ""):
        return Style(GENERAL)
    if "%" in lowered:
        return Style(PERCENT)
    has_time = bool(re.search(r"[hs]", lowered))
    has_date = bool(re.search(r"[yd]", lowered)) or ("m" in lowered and not has_time)  # m alone is a month
    if has_date or has_time:
        return Style(DATETIME if has_date and has_time else DATE if has_date else TIME)
    if re.fullmatch(r"0+([^0#?.,Ee]+0+)*", section) and len(section) > 1:
        return Style(CODE, section)
    return Style(GENERAL)


def styles_of(xml: bytes) -> list[Style]:
    """Each cell style (``cellXfs`` index) of ``styles.xml``, as its number format's :class:`Style`."""
    text = xml.decode("utf-8", "replace")
    codes = dict(_BUILTIN)
    for num_id, code in re.findall(r'<(?:\w+:)?numFmt\b[^>]*?numFmtId="(\d+)"[^>]*?formatCode="([^"]*)"', text):
        codes[int(num_id)] = html.unescape(code)
    xfs = re.search(r"<(?:\w+:)?cellXfs\b[^>]*>(.*?)</(?:\w+:)?cellXfs>", text, re.S)
    found = re.findall(r"<(?:\w+:)?xf\b([^>]*)", xfs.group(1)) if xfs else []
    ids = [int(m.group(1)) if (m := re.search(r'numFmtId="(\d+)"', a)) else 0 for a in found]
    return [style_of(codes[i]) if i in codes else Style(GENERAL) for i in ids]


def numbers_shown(
    values: pa.Array, numbers: pa.Array, raw: pa.Array, style_ids: np.ndarray, styles: list[Style], date1904: bool
) -> pa.Array:
    """Each number shown by its style: shortest form, or date, time, percentage or code."""
    kind_of = np.array([s.kind for s in styles] + [GENERAL], np.int8)  # the last: a style that is not there
    kinds = kind_of[np.minimum(style_ids, len(styles))]
    is_number = pc.and_(numbers, pc.not_equal(raw, ""))
    try:
        floats = pc.if_else(is_number, raw, "0").cast(pa.float64())
    except pa.ArrowInvalid as e:
        raise InvalidInput("the workbook is damaged (a number cell holds no number) — " + AGAIN) from e
    as_float = floats.to_numpy()
    shown = _general(as_float)
    mask = is_number.to_numpy(zero_copy_only=False)
    dated = mask & np.isin(kinds, (DATE, DATETIME, TIME)) & (as_float >= 0) & (as_float < 2958466)  # to 9999-12-31
    if dated.any():
        shown = pc.replace_with_mask(shown, pa.array(dated), _dates(as_float[dated], kinds[dated], date1904))
    for style_id in np.unique(style_ids[mask & np.isin(kinds, (PERCENT, CODE))]).tolist():
        chosen = mask & (style_ids == style_id)
        shown = pc.replace_with_mask(shown, pa.array(chosen), _special(_shown(as_float[chosen]), styles[style_id]))
    return pc.if_else(is_number, shown, values)


def _shown(numbers: np.ndarray) -> np.ndarray:
    """Numbers as Excel shows them: rounded to 15 significant digits (a saved ``0.30000000000000004`` is
    0.3), the float nearest to that rounding."""
    out = numbers.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        finite = np.isfinite(numbers) & (numbers != 0)
        mag = np.zeros_like(numbers)
        mag[finite] = np.floor(np.log10(np.abs(numbers[finite])))
        small = finite & (mag < 15) & (mag > -290)  # scale by an exact power of ten up to 10**22
        scale = 10.0 ** (14 - mag[small])
        out[small] = np.rint(numbers[small] * scale) / scale
        big = finite & (mag >= 15)
        unit = 10.0 ** (mag[big] - 14)
        out[big] = np.rint(numbers[big] / unit) * unit
    return out


def _general(numbers: np.ndarray) -> pa.Array:
    """Numbers under the General format: 15 significant digits; whole numbers below 10**15 in full digits
    (a barcode ``4006381333931``, never ``4.006381333931e+12``; ``0``, never ``-0``); others in the shortest
    text that reads back as the rounded number (``0.1``, ``1e-07``)."""
    rounded = _shown(numbers)
    shown = pc.cast(pa.array(rounded), TEXT)
    whole = np.isfinite(rounded) & (np.abs(rounded) < 1e15) & (rounded == np.rint(rounded))
    if whole.any():
        digits = pc.cast(pa.array(rounded[whole].astype(np.int64)), TEXT)
        shown = pc.replace_with_mask(shown, pa.array(whole), digits)
    return shown


#: Days from Excel's day 0 to 1970-01-01: 1899-12-30 (1900 dates, past Excel's made-up 1900-02-29) or 1904-01-01.
_EPOCH_1900, _EPOCH_1904 = 25_569, 24_107


def _dates(serials: np.ndarray, kinds: np.ndarray, date1904: bool) -> pa.Array:
    """Excel date serials as ISO 8601: a date, a date and time (to the second), or a time of day."""
    days = np.where(serials < 60, serials + 1, serials) if not date1904 else serials  # before 1900-03-01
    seconds = np.rint(days * 86_400).astype(np.int64) - (_EPOCH_1904 if date1904 else _EPOCH_1900) * 86_400
    stamps = pa.array(seconds, pa.timestamp("s"))
    as_date = stamps.cast(pa.date32()).cast(TEXT)
    as_time = stamps.cast(pa.time32("s")).cast(TEXT)
    as_datetime = pc.replace_substring(stamps.cast(TEXT), " ", "T")
    kind = pa.array(kinds)
    return pc.if_else(pc.equal(kind, DATE), as_date, pc.if_else(pc.equal(kind, TIME), as_time, as_datetime))


def _special(numbers: np.ndarray, style: Style) -> pa.Array:
    """Numbers under a percentage or code format, as shown; a code of zeros alone (``00000``) all at once."""
    if style.kind == CODE and set(style.code) == {"0"}:
        whole = np.floor(np.abs(numbers) + 0.5)  # Excel rounds half away from zero
        if whole.max() < 1e15:
            digits = pc.utf8_lpad(pa.array(whole.astype(np.int64)).cast(TEXT), len(style.code), "0")
            return pc.if_else(
                pa.array(numbers < 0),
                pc.binary_join_element_wise(pa.scalar("-", TEXT), digits, pa.scalar("", TEXT)),
                digits,
            )
    render = _percent if style.kind == PERCENT else lambda number: _code(number, style.code)
    return pa.array([render(number) for number in numbers.tolist()], TEXT)


def _percent(number: float) -> str:
    """A percentage as shown, in full (0.125 is 12.5%; the format's count of decimals is not applied)."""
    shifted = Decimal(repr(number)).scaleb(2).normalize()
    return f"{shifted:f}%"


def _code(number: float, code: str) -> str:
    """A number under a format of zeros (``00000``, ``000-00-0000``): rounded, padded, placed as Excel does."""
    if number != number or abs(number) >= 1e15:  # NaN or too big for digits: as it is
        return repr(number)
    digits = str(int(Decimal(repr(abs(number))).quantize(Decimal(1), "ROUND_HALF_UP")))
    places = code.count("0")
    digits = digits.rjust(places, "0")
    extra, digits = digits[: len(digits) - places], digits[len(digits) - places :]
    parts, it = [], iter(digits)
    for char in code:
        parts.append(next(it) if char == "0" else char)
    return ("-" if number < 0 else "") + extra + "".join(parts)
