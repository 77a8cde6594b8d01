"""The workbook reader: a sheet's rows as blocks of text columns, with exact progress (see :mod:`.workbook`)."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidInput, NotSent
from .common import TEXT
from .sheetblocks import BLOCK_CELLS, concat, gathered, select, table_of
from .sheetcells import (
    MAX_BLOCK_TEXT,
    MAX_ROWS,
    Cells,
    Shared,
    TooMuchText,
    cells_of,
    column_letters,
    string_texts,
    text_array,
)
from .sheetnumbers import AGAIN, styles_of
from .sparse import NOT_SENT_TEXT
from .workbook import DAMAGED, MAX_SHEET_XML, MAX_STRINGS_XML, Workbook, open_part, open_workbook, read_part

#: XML read per piece: the unit of parsing and of the memory it takes (a block gathers the cells of pieces:
#: :mod:`.sheetblocks`). Measured when a block was a piece, on Excel's largest sheet (1,048,575 rows × 6,
#: bench/workbook.py), peak RSS and CPU: 4 MB 271 MB, 7.9 s; 2 MB 243 MB, 8.7 s (the same, within the noise of a
#: loaded box); 1 MB 240 MB, 10.7 s.
PIECE_BYTES = 2 << 20
#: The text a sheet may unpack to in all: this many times the workbook's size, and at least
#: :data:`MIN_SHEET_TEXT`. A real sheet's text is a few times its file (shared strings spare repeats); one
#: whose cells all name one long string unpacked 12,000 times its 78 KB (found by the outside review).
TEXT_RATIO = 100
MIN_SHEET_TEXT = 256 << 20
#: Rows looked at to find the header, and rows under a candidate it is compared with.
HEADER_SCAN_ROWS = 30
HEADER_LOOKAHEAD = 10


def _pieces(stream: IO[bytes], root: bytes, item: bytes, size: int) -> Iterator[tuple[bytes, int]]:
    """The XML of a part in pieces of whole ``item`` elements, each with the bytes read up to its end.

    ``root`` names the part's root element, which says the namespace prefix its elements carry (none,
    usually; ``x:`` from some writers). A piece ends after the last ``</item>`` in what has been read;
    when one element is bigger than ``size``, reading goes on until it ends, up to eight times ``size``.
    A preview's copy of the file (:mod:`.sparse`) ends where its bytes do: the whole elements sent are all
    yielded by then (each piece ends at the last one read), and the one cut short is left out.
    """
    pending, offset, end_tag = b"", 0, b""
    while True:
        try:
            data = stream.read(size)
        except NotSent:
            return
        buf = pending + data
        if not end_tag:
            found = re.search(rb"<(\w+:)?" + root + rb"\b", buf)
            end_tag = b"</" + ((found.group(1) or b"") if found else b"") + item + b">"
        if not data:
            if buf:
                yield buf, offset + len(buf)
            return
        cut = buf.rfind(end_tag)
        if cut < 0:
            if len(buf) > 8 * size:
                raise InvalidInput(f"the workbook holds a single row of more than {8 * size >> 20} MB — " + AGAIN)
            pending = buf
            continue
        cut += len(end_tag)
        offset += cut
        yield buf[:cut], offset
        pending = buf[cut:]


def shared_strings(book: Workbook) -> Shared:
    """The workbook's shared strings (the texts cells refer to by number), in order; one longer than a cell
    holds is marked, its text dropped (a cell that names it is refused)."""
    if book.strings_part is None:
        return Shared.concat([])
    parts = []
    with open_part(book.zip, book.strings_part, MAX_STRINGS_XML) as stream:
        for piece, _offset in _pieces(stream, b"sst", b"si", PIECE_BYTES):
            text = text_array(piece)
            split = pc.split_pattern(text, "<si>") if b"<si>" in piece else pc.split_pattern_regex(text, r"<\w+:si>")
            items = pc.list_flatten(split)[1:]  # what comes before the first is no string
            parts.append(Shared.of(string_texts(items)))
            del text, split, items
            release()
    return Shared.concat(parts)


def find_header(cells: Cells) -> int:
    """The row that holds the column names: the first of the first rows that is mostly text (data rows hold
    numbers) and about as wide as the rows under it (a title or a note above the table is one or two cells).
    With no such row (names that are numbers: ``Region, 2021, 2022``), the first row about as wide as the
    rows under it that holds some text; else the first row."""
    rows, counts = np.unique(cells.rows, return_counts=True)
    rows, counts = rows[:HEADER_SCAN_ROWS], counts[:HEADER_SCAN_ROWS]
    wide: int | None = None
    for i, row in enumerate(rows.tolist()):
        under = counts[i + 1 : i + 1 + HEADER_LOOKAHEAD]
        text = int(cells.is_text[cells.rows == row].sum())
        if not len(under) or counts[i] >= 0.75 * float(np.median(under)):
            if 2 * text >= counts[i]:
                return int(row)
            if wide is None and text:
                wide = int(row)
    return wide if wide is not None else int(rows[0])


class WorkbookReader:
    """Reads one sheet of a workbook as a header plus a sequence of Arrow tables of string columns.

    ``source`` is the file, or a workbook already opened (:func:`~.workbook.open_workbook`: its sheets listed
    for a choice first), which the reader then closes with its own.
    ``sheet`` is the sheet's name (default: the one the workbook opens on, ``Workbook.sheet``);
    ``header_row`` the header's row as Excel numbers rows (default: found, :func:`find_header`); ``piece_bytes`` the
    XML parsed at a time, ``block_cells`` the cells a block holds at most (:mod:`.sheetblocks`). After
    construction ``names``, ``header_row`` and ``sheet`` say what was taken. ``tables()`` yields each
    block with the offset it has reached in the file, which ends at the file's size; ``bytes_consumed``
    follows it. After each table, ``last_rows`` holds its rows' numbers in the sheet (as CsvReader's, when asked for).
    """

    last_rows: np.ndarray | None = None

    def __init__(
        self,
        source: str | os.PathLike[str] | IO[bytes] | Workbook,
        sheet: str | None = None,
        header_row: int | None = None,
        piece_bytes: int = PIECE_BYTES,
        block_cells: int = BLOCK_CELLS,
    ) -> None:
        # Rows are counted only to choose the default sheet (notes opened on, a table beside them).
        self._book = source if isinstance(source, Workbook) else open_workbook(source, count_rows=sheet is None)
        self._block_cells = block_cells
        try:
            self._start(source, sheet, header_row, piece_bytes)
        except BaseException:
            self.close()
            raise

    def _start(
        self,
        source: str | os.PathLike[str] | IO[bytes] | Workbook,
        sheet: str | None,
        header_row: int | None,
        piece_bytes: int,
    ) -> None:
        book = self._book
        if isinstance(source, Workbook):
            assert book.zip.fp is not None  # an open zip
            source = book.zip.fp
        self.sheet = book.sheet(sheet).name
        part = book.sheet(sheet).part
        self.input_size = os.stat(source).st_size if isinstance(source, (str, os.PathLike)) else _size(source)
        self._xml_size = book.zip.getinfo(part).file_size
        styles = styles_of(read_part(book.zip, book.styles_part)) if book.styles_part else []
        self._shared, self._styles, self._text = shared_strings(book), styles, 0
        self._stream = open_part(book.zip, part, MAX_SHEET_XML)
        pieces = _pieces(self._stream, b"worksheet", b"row", piece_bytes)
        self._cells = ((cells, end) for p, end in pieces for cells in self._cells_of(_sheet_data(p)))
        self.bytes_consumed = 0
        self.header_row, self.names, self._first_column, self._pending = self._header(header_row)

    def _cells_of(self, piece: bytes) -> Iterator[Cells]:
        """The cells of a piece; in halves (and so on) when its cells name more long shared text than a block holds."""
        book = self._book
        # A preview's copy may end before the shared strings do: a text past those sent is shown as a marker.
        beyond = NOT_SENT_TEXT if book.partial else None
        try:
            cells = cells_of(piece, self._shared, self._styles, book.date1904, beyond, self.sheet)
        except TooMuchText:
            for half in _halves(piece):
                yield from self._cells_of(half)
            return
        except pa.ArrowInvalid as e:  # a cell's number, index or style that is no number ("", " 0", "1e0")
            raise InvalidInput(DAMAGED) from e
        self._text += cells.values.nbytes
        budget = max(MIN_SHEET_TEXT, TEXT_RATIO * self.input_size)
        if self._text > budget:
            raise InvalidInput(
                f"sheet {self.sheet!r} unpacks to more than {budget / 1e6:,.0f} MB of text, over {TEXT_RATIO} times "
                "the workbook's size, which no real workbook does (its cells repeat long texts), so it is not read"
            )
        yield _released(cells)

    def _header(self, chosen: int | None) -> tuple[int, list[str], int, tuple[Cells, int]]:
        """Read pieces until the header row is among them; what follows it is the first block."""
        parts: list[Cells] = []
        end = 0
        for piece, end in self._cells:  # noqa: B007 (end: where the last piece read ends)
            _check_rows(piece)
            parts.append(piece if chosen is None else select(piece, piece.rows >= chosen))  # rows above: let go
            seen = np.unique(np.concatenate([c.rows for c in parts]))
            if len(seen) >= HEADER_SCAN_ROWS if chosen is None else len(seen) > 0:
                break
            if sum(c.values.nbytes for c in parts) > MAX_BLOCK_TEXT:  # long rows: the header is among those read
                break
        if not any(len(c.rows) for c in parts):
            if chosen is None:
                raise InvalidInput(f"sheet {self.sheet!r} is empty — choose the sheet that holds the table")
            raise InvalidInput(f"sheet {self.sheet!r} has nothing in row {chosen:,} or under it")
        cells = concat(parts)
        row = find_header(cells) if chosen is None else chosen
        in_row = cells.rows == row
        if not in_row.any():
            raise InvalidInput(
                f"row {row:,} of sheet {self.sheet!r} is empty — choose the row that holds the column names"
            )
        columns, values = cells.columns[in_row], cells.values.filter(pa.array(in_row)).to_pylist()
        first, last = int(columns.min()), int(columns.max())
        names = [""] * (last - first + 1)
        for column, value in zip(columns.tolist(), values, strict=True):
            names[column - first] = value
        _check_names(names, first, row)
        return row, names, first, (select(cells, cells.rows > row), end)

    def tables(self) -> Iterator[tuple[pa.Table, int]]:
        """Yield blocks of rows (all columns text; empty rows left out), each with the input offset it reaches:
        the rows read with the header first (a preview's first rows come at once), then blocks of at most
        ``block_cells`` cells (:func:`~.sheetblocks.gathered`)."""
        first = gathered(iter([self._pending]), len(self.names), 0, self._block_cells)
        blocks = itertools.chain(first, self._checked(self._pending[1]))
        try:
            for cells, end in blocks:
                table = self._table(cells)
                del cells  # held no longer than its table is made: while a block waits, only its table is held
                self.bytes_consumed = self._offset(end)
                yield table, self.bytes_consumed
            if self.bytes_consumed < self.input_size:
                self.bytes_consumed = self.input_size
                yield self.empty_table(), self.input_size
        finally:
            self.close()

    def _checked(self, start: int) -> Iterator[tuple[Cells, int]]:
        """The blocks after the header's: each piece's rows checked before they are gathered."""

        def pieces() -> Iterator[tuple[Cells, int]]:
            for cells, end in self._cells:
                _check_rows(cells)
                yield cells, end

        return gathered(pieces(), len(self.names), start, self._block_cells)

    def _offset(self, xml_end: int) -> int:
        return self.input_size if xml_end >= self._xml_size else self.input_size * xml_end // self._xml_size

    def _table(self, cells: Cells) -> pa.Table:
        """The rows of ``cells`` in the header's columns: a value outside them is refused, naming its cell."""
        first, width = self._first_column, len(self.names)
        outside = (cells.columns < first) | (cells.columns >= first + width)
        if outside.any():
            at = int(np.flatnonzero(outside)[0])
            cell = f"{column_letters(int(cells.columns[at]))}{int(cells.rows[at])}"
            raise InvalidInput(
                f"cell {cell} of sheet {self.sheet!r} holds a value, but the header (row {self.header_row:,}) "
                "has no column there — give that column a name in the header row, or clear the cell"
            )
        table, self.last_rows = table_of(cells, self.names, first)  # the rows as Excel numbers them
        return table

    def empty_table(self) -> pa.Table:
        return pa.table({name: pa.array([], TEXT) for name in self.names})

    def __enter__(self) -> WorkbookReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the sheet and the zip (never the caller's own file); done when the last block is read."""
        stream = getattr(self, "_stream", None)
        if stream is not None:
            stream.close()
        self._book.zip.close()


def release() -> None:
    """Give the memory a piece's arrays held back to the system: mimalloc (Arrow's allocator) keeps it
    otherwise, and reading the shared strings of 1,048,576 rows left 90 MB held for no array."""
    pa.default_memory_pool().release_unused()


def _released(cells: Cells) -> Cells:
    release()
    return cells


def _halves(piece: bytes) -> tuple[bytes, bytes]:
    """A piece of several whole rows cut in two at the end of a row near its middle."""
    ends = [m.end() for m in re.finditer(rb"</(?:\w+:)?row>", piece)][:-1]  # the last row's end is the piece's
    if not ends:  # rows that are not closed: no sheet a spreadsheet program wrote
        raise InvalidInput(DAMAGED)
    cut = min(ends, key=lambda end: abs(end - len(piece) // 2))
    return piece[:cut], piece[cut:]


def _size(file: IO[bytes]) -> int:
    position = file.tell()
    size = file.seek(0, os.SEEK_END)
    file.seek(position)
    return size


def _sheet_data(piece: bytes) -> bytes:
    """A piece without what comes before ``<sheetData>`` and after ``</sheetData>`` (no cells there)."""
    start = re.search(rb"<(?:\w+:)?sheetData\b", piece[: 1 << 20])
    end = re.search(rb"</(?:\w+:)?sheetData>", piece[-(1 << 20) :])
    low = start.start() if start else 0
    high = len(piece) - min(len(piece), 1 << 20) + end.start() if end else len(piece)
    return piece[low:high]


def _check_rows(cells: Cells) -> None:
    if len(cells.rows) and int(cells.rows.max()) > MAX_ROWS:
        raise InvalidInput(
            f"the workbook has a cell in row {int(cells.rows.max()):,}, beyond Excel's last ({MAX_ROWS:,}) — "
            "it is not a workbook Excel wrote"
        )


def _check_names(names: list[str], first: int, row: int) -> None:
    seen: dict[str, list[str]] = {}
    for i, name in enumerate(names):
        seen.setdefault(name, []).append(column_letters(first + i))
    dupes = {name: cols for name, cols in seen.items() if len(cols) > 1}
    if dupes:
        described = "; ".join(
            f"{repr(name) if name else 'an empty name'} (columns {', '.join(cols)})" for name, cols in dupes.items()
        )
        raise InvalidInput(
            f"the header (row {row:,}) repeats column names: {described} — give every column a different name"
        )
