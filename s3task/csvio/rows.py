"""Which row of the input is wrong, named as Excel numbers it, and why.

Staff open a refused file in Excel, whose row numbers count records (the header is row 1, and
a value with line breaks in it is one row), not lines of text: a file with quoted line breaks
has its record on row 4,272 where a text editor shows line 5,000. So a refused record is named
by its row, by its first cell, and by its line only where that differs.

The cause decides the hint: a quote opened and never closed (it swallows the rows after it, and
the count of values goes wrong only later, where its "closing" quote really opens another value),
a row with too many values (a value with the delimiter in it, not in double quotes), or a row
with too few. Everything here runs only once a block has been refused: it may be slow.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInput
from .boundary import _regular, scan_exact
from .common import QUOTE

if TYPE_CHECKING:
    from .parsing import Block

_ONE = {",": "a comma", ";": "a semicolon", "\t": "a tab", "|": "a pipe (|)"}
#: The longest first cell shown in a message.
_CELL_CHARS = 40


class BadRow(InvalidInput):
    """A row of the input cannot be read; ``good_bytes`` of its block (the rows before it) can."""

    def __init__(self, message: str, good_bytes: int = 0) -> None:
        super().__init__(message)
        self.good_bytes = good_bytes


@dataclass
class _Record:
    index: int  # records before it in the text, blank ones included
    line: int  # lines before it in the text
    start: int  # character offset of its start
    fields: list[str]


def where(row: int, line: int, names: list[str], fields: list[str]) -> str:
    """``row 4,272 (customer_id C04271; line 5,000 in a text editor)``: the record as staff find it."""
    said = [f"{names[0]} {_short(fields[0])}"] if fields and names and fields[0].strip() else []
    if line != row:
        said.append(f"line {line:,} in a text editor")
    return f"row {row:,}" + (f" ({'; '.join(said)})" if said else "")


def _short(cell: str) -> str:
    cell = " ".join(cell.split())
    return cell if len(cell) <= _CELL_CHARS else cell[: _CELL_CHARS - 1] + "…"


def _records(text: str, delimiter: str, strict: bool = False) -> Any:  # a csv reader (its type is private)
    return csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=strict)


def diagnose_rows(
    text: str, names: list[str], first_line: int, first_row: int, delimiter: str
) -> BadRow | tuple[int, str] | None:
    """What is wrong with the first bad record of ``text`` (whole rows): a :class:`BadRow`, the csv
    module's own complaint and the line it is on, or None when every record has the header's count."""
    bad = _first_miscounted(text, len(names), delimiter)
    if isinstance(bad, tuple):
        return first_line + bad[0], bad[1]
    if bad is None:
        return None
    opened = _first_runaway(text, delimiter, bad.index)
    if opened is not None:
        return _unclosed(text, opened, names, first_line, first_row)
    said = where(first_row + bad.index, first_line + bad.line, names, bad.fields)
    found, wanted = len(bad.fields), len(names)
    columns = f"{wanted} column{'s' if wanted != 1 else ''}"
    if found > wanted:
        hint = (
            f"{found} values where the header has {columns} — a value that contains "
            f"{_ONE.get(delimiter, repr(delimiter))} must be in double quotes"
        )
    else:
        hint = (
            f"{found} value{'s' if found != 1 else ''} where the header has {columns} — the row is short: "
            f"it needs one value for every column, an empty value too (written as nothing between two "
            f"{_ONE.get(delimiter, repr(delimiter))[2:]}s)"
        )
    return BadRow(f"{said}: {hint}", _good_bytes(text, bad.start))


def _first_miscounted(text: str, ncols: int, delimiter: str) -> _Record | tuple[int, str] | None:
    reader = _records(text, delimiter)
    index = line = start = 0
    offsets = _LineStarts(text)
    try:
        for fields in reader:
            if fields and len(fields) != ncols:
                return _Record(index, line, start, fields)
            index, line = index + 1, reader.line_num
            start = offsets.at(line)
    except csv.Error as e:
        return line, str(e)
    return None


def _first_runaway(text: str, delimiter: str, last: int) -> _Record | None:
    """The first record up to record ``last`` whose quoted value runs over a line end and is "closed" by
    a quote with more of the value after it: a quote opened there and never closed (strict reading)."""
    reader = _records(text, delimiter, strict=True)
    offsets = _LineStarts(text)
    index = line = 0
    while index <= last:
        try:
            next(reader)
        except StopIteration:
            return None
        except csv.Error:
            record = _Record(index, line, offsets.at(line), next(_records(text[offsets.at(line) :], delimiter)))
            return record if any("\n" in f or "\r" in f for f in record.fields) else None
        index, line = index + 1, reader.line_num
    return None


def _unclosed(text: str, record: _Record, names: list[str], first_line: int, first_row: int) -> BadRow:
    said = where(first_row + record.index, first_line + record.line, names, record.fields)
    column = next(i for i, f in enumerate(record.fields) if "\n" in f or "\r" in f)
    name = f"`{names[column]}`" if column < len(names) else f"column {column + 1}"
    value = record.fields[column]
    swallowed = value.count("\n") or value.count("\r")
    lines = "the next line was" if swallowed == 1 else f"the {swallowed:,} lines after it were"
    return BadRow(
        f'{said}: a quote opened in {name} is never closed — the value there starts with " and no " ends it, '
        f"so {lines} read as part of that value. "
        'Add the closing ", or write a " that is part of the text twice ("")',
        _good_bytes(text, record.start),
    )


def unclosed_at_end(
    data: bytes, open_quote: int, names: list[str], first_line: int, first_row: int, eol: bytes, delimiter: bytes
) -> BadRow:
    """A quote opened at byte ``open_quote`` of ``data`` (which starts a row) that nothing closes.
    No ``names``: ``data`` is the header row."""
    sep = delimiter.decode()
    start = scan_exact(data[:open_quote], eol, delimiter=delimiter)[0] + 1
    rows = sum(1 for _ in _records(data[:start].decode("utf-8", "replace"), sep))
    head = data[start:open_quote].decode("utf-8", "replace")
    column = len(next(_records(head, sep), [""])) - 1  # the quote starts the value after ``head``
    fields: list[str] = next(_records(data[start:].decode("utf-8", "replace"), sep), [])
    name = f"`{names[column]}`" if column < len(names) else f"column {column + 1}"
    if names:
        said = where(first_row + rows, first_line + data.count(eol, 0, start), names, fields)
        at = f" on line {first_line + data.count(eol, 0, open_quote):,}"
    else:
        said, at = f"row {first_row:,} (the header row)", ""
    return BadRow(
        f'{said}: a quote opened in {name}{at} is never closed — the value there starts with " and no " ends '
        'it, so the rest of the file would be read as that one value (a " inside a value is written twice: "")',
        start,
    )


def blank_rows(buf: bytes | memoryview, eol: bytes, delimiter: bytes) -> int:
    """Blank lines outside quotes in ``buf`` (whole rows): rows to Excel, skipped by Arrow."""
    data = np.frombuffer(buf, dtype=np.uint8)
    starts = np.concatenate(([0], np.flatnonzero(data == eol[0]) + 1))
    starts = starts[starts < len(data)]
    blank = data[starts] == eol[0]
    if eol == b"\n":  # a CRLF line end after a line end: a blank line too
        cr = starts[(data[starts] == 0x0D) & (starts + 1 < len(data))]
        blank[np.isin(starts, cr[data[cr + 1] == 0x0A])] = True
    starts = starts[blank]
    if not len(starts):
        return 0
    raw = bytes(buf)
    quotes = np.flatnonzero(data == QUOTE)
    if _regular(raw, quotes, delimiter):  # quote parity says what is inside a value
        return int(np.count_nonzero(np.searchsorted(quotes, starts) % 2 == 0))
    return sum(1 for fields in _records(raw.decode("utf-8", "replace"), delimiter.decode()) if not fields)


def block_rows(block: Block, rows: int) -> np.ndarray:
    """The row number, as Excel numbers rows, of each of the ``rows`` records Arrow read from ``block``: a
    blank line is a row to Excel that Arrow skips, and a value's line breaks inside quotes are one row.
    A block with a line per row is counted; only one whose lines and rows differ is read again (csv)."""
    if rows == block.lines:
        return np.arange(block.first_row, block.first_row + rows, dtype=np.int64)
    records = _records(bytes(block.data).decode("utf-8", "replace"), block.delimiter.decode())
    return np.array([block.first_row + k for k, fields in enumerate(records) if fields], dtype=np.int64)


def _good_bytes(text: str, start: int) -> int:
    """The UTF-8 bytes of ``text`` before character ``start`` (the rows before a bad one)."""
    return len(text[:start].encode("utf-8"))


class _LineStarts:
    """Character offset of the start of each line of a text (after ``n`` line ends)."""

    def __init__(self, text: str) -> None:
        self._starts = [0]
        pos = 0
        for part in io.StringIO(text, newline=""):
            pos += len(part)
            self._starts.append(pos)

    def at(self, lines: int) -> int:
        return self._starts[min(lines, len(self._starts) - 1)]
