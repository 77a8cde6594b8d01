"""Where rows end: a line end outside quotes, found as Arrow's own reading would find it.

The fast path counts quote characters (numpy) and checks that every quote sits where RFC 4180
puts one; only then is quote parity the same as Arrow's reading. Otherwise a slower exact scan
that follows Arrow's quoting rules decides (:func:`scan_exact`).
"""

from __future__ import annotations

import functools

import numpy as np

from .common import QUOTE

COMMA = b","


@functools.cache
def _neighbours(delimiter: bytes) -> np.ndarray:
    """Characters that may stand next to a quote in well-formed CSV: the delimiter, LF, CR, "."""
    table = np.zeros(256, dtype=bool)
    table[[delimiter[0], 0x0A, 0x0D, QUOTE]] = True
    return table


def count_byte(buf: bytes, byte: bytes, end: int) -> int:
    """How many times the one-byte ``byte`` occurs in ``buf[:end]`` (numpy: several times faster than bytes.count)."""
    return int(np.count_nonzero(np.frombuffer(buf, dtype=np.uint8, count=end) == byte[0]))


def find_boundary(buf: bytes, eol: bytes, delimiter: bytes = COMMA) -> int:
    """Index of the line end that closes the last complete row in ``buf`` (-1 if none).

    ``buf`` starts at the start of a row, outside quotes.
    """
    last = buf.rfind(eol)
    if last < 0 or buf.find(b'"', 0, last) < 0:
        return last
    quotes = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == QUOTE)
    if not _regular(buf, quotes[: np.searchsorted(quotes, last)], delimiter):
        return scan_exact(buf, eol, delimiter=delimiter)[0]
    pos = last
    while pos >= 0:
        before = int(np.searchsorted(quotes, pos))
        if before % 2 == 0:
            return pos
        # ``pos`` is inside the quoted field opened by quote number before-1: try the line end before it.
        pos = buf.rfind(eol, 0, int(quotes[before - 1]))
    return -1


def _regular(buf: bytes, quotes: np.ndarray, delimiter: bytes = COMMA) -> bool:
    """True when quote parity reads ``buf`` exactly like Arrow does.

    Under the parity reading, even-numbered quotes open a field (so they follow
    the delimiter, a line end, the start, or the quote just before: a doubled quote)
    and odd-numbered ones close it (so they are followed by the delimiter, a line end
    or a quote). Anything else is a stray quote in an unquoted field.
    """
    if not len(quotes):
        return True
    data = np.frombuffer(buf, dtype=np.uint8)
    opening = quotes[0::2]
    closing = quotes[1::2]
    neighbours = _neighbours(delimiter)
    ok_open = neighbours[data[opening[opening > 0] - 1]].all()
    inner = closing[closing + 1 < len(data)]
    return bool(ok_open and neighbours[data[inner + 1]].all())


def _in_quotes(buf: bytes, eol: bytes, delimiter: bytes = COMMA) -> bool:
    return open_quote_at_end(buf, eol, delimiter) >= 0


def open_quote_at_end(buf: bytes, eol: bytes, delimiter: bytes = COMMA) -> int:
    """Index of the quote that opened a value still open at the end of ``buf`` (-1 if none)."""
    quotes = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == QUOTE)
    if not _regular(buf, quotes, delimiter):
        return scan_exact(buf, eol, delimiter=delimiter)[1]
    return _opening(quotes) if len(quotes) % 2 else -1


def _opening(quotes: np.ndarray) -> int:
    """Where the quoted value left open by an odd number of regular quotes starts.

    Even-numbered quotes open a value, except those right after the previous
    quote (the second half of a doubled quote, which keeps the value open).
    """
    opening = quotes[0::2]
    reopened = np.zeros(len(opening), dtype=bool)
    reopened[1:] = opening[1:] - 1 == quotes[1::2][: len(opening) - 1]
    return int(opening[np.flatnonzero(~reopened)[-1]])


def scan_exact(buf: bytes, eol: bytes, stop_at_first: bool = False, *, delimiter: bytes = COMMA) -> tuple[int, int]:
    """Follow Arrow's quoting rules through ``buf`` (which starts a row, outside quotes).

    A quote opens a quoted field only at the start of a field; inside one, a
    doubled quote is a quote and a single quote closes it (what follows, up to
    the next delimiter, is still part of the value). Returns the index of the last
    line end outside quotes (the first one with ``stop_at_first``; -1 if
    none) and the index of the quote left open at the end (-1 if none).
    """
    last_end = -1
    starts = delimiter + b"\r\n"  # what a quote that opens a value follows
    pos = 0  # always outside quotes
    while True:
        q = buf.find(b'"', pos)
        stop = q if q >= 0 else len(buf)
        if stop_at_first:
            first = buf.find(eol, pos, stop)
            if first >= 0:
                return first, -1
        else:
            last_end = max(last_end, buf.rfind(eol, pos, stop))
        if q < 0:
            return last_end, -1
        if q > 0 and buf[q - 1] not in starts:
            pos = q + 1  # a literal quote inside an unquoted value
            continue
        close = q + 1
        while True:
            close = buf.find(b'"', close)
            if close < 0:
                return last_end, q
            if buf[close + 1 : close + 2] != b'"':
                break
            close += 2  # a doubled quote inside the quoted value
        pos = close + 1
