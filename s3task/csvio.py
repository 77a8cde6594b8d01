"""Streaming CSV in and out, with Arrow doing the heavy lifting.

Reading: :class:`CsvReader` pulls the input from a plain ``read(n)`` stream and
cuts it into *blocks of whole rows* itself, then parses each block with
Arrow's multithreaded parser (every column as string). Cutting the blocks
ourselves, instead of handing the stream to ``pyarrow.csv.open_csv``, buys:

- exact progress: a block ends on a row boundary, so the bytes consumed by the
  rows parsed so far are known to the byte (``open_csv`` reads tens of blocks
  ahead of the rows it has returned, and says nothing about where they end);
- exact line numbers in error messages: each block knows the file line it
  starts on, and a block Arrow refuses is re-read by Python's ``csv`` module to
  find the line and say what is wrong with it;
- rows bigger than the block size (a 5 MB cell) just make that one block
  bigger, up to :data:`MAX_ROW_BYTES`;
- bounded memory: no read-ahead beyond the one block being parsed.

A row boundary is a line end outside quotes. The fast path counts quote
characters (numpy) and checks that every quote sits where RFC 4180 puts one
(opening a field, closing it, or doubled inside it); only then is quote parity
the same as Arrow's own reading. Otherwise (stray quotes such as ``27" wide``)
a slower exact scan that follows Arrow's quoting rules decides.

Writing: :class:`CsvWriter` turns handler output into RFC 4180 CSV (UTF-8,
CRLF, header once) with ``pyarrow.csv.CSVWriter``, after casting every column
to text and neutralising spreadsheet formulas (see :func:`neutralise`).
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .errors import InvalidInput

#: Bytes of input per block handed to Arrow (the unit of progress and of memory). Measured on
#: a 100 MB, 11-column file: 4 MB is as fast as 8 MB and peaks about 50-80 MB lower
#: (email_enrichment: ~220 MB instead of ~300 MB); 2 MB starts to cost per-block overhead.
DEFAULT_BLOCK_SIZE = 4 << 20
#: Arrow parses a block in pieces of this size, in parallel.
ARROW_BLOCK_SIZE = 1 << 20
#: A single row (usually one huge cell) may be at most this big.
MAX_ROW_BYTES = 64 << 20
#: Columns a file may have (a spreadsheet's limit). Memory and time grow with the column count
#: whatever the size of the file: 100,000 columns of 3 rows (1.3 MB) took 1.4 GB and 24 s.
MAX_COLUMNS = 16_384

BOM = b"\xef\xbb\xbf"
QUOTE = 0x22
#: Characters that may stand next to a quote in well-formed CSV: , LF CR ".
_NEIGHBOURS = np.zeros(256, dtype=bool)
_NEIGHBOURS[[0x2C, 0x0A, 0x0D, QUOTE]] = True
#: First characters that make a spreadsheet read a cell as a formula.
_FORMULA_START = np.zeros(256, dtype=bool)
_FORMULA_START[list(b"=+-@\t\r")] = True
_SIGN = np.zeros(256, dtype=bool)
_SIGN[list(b"+-")] = True
_NUMBER = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"

#: Arrow type of every text column. pandas keeps text as large_string, so reading it that way
#: makes ``to_pandas`` zero-copy (string would be converted, offsets and all).
TEXT = pa.large_string()

SAVE_AS_UTF8 = "save the file as 'CSV UTF-8' and upload it again"


def line_label(line: int) -> str:
    return f"line {line:,}"


# --- reading ------------------------------------------------------------------


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


@dataclass
class Block:
    """Whole rows of the input: ``data`` starts on ``first_line`` and ends at byte ``end`` of the file."""

    data: bytes | memoryview
    first_line: int
    end: int
    eol: bytes


class CsvReader:
    """Reads a CSV stream as a header plus a sequence of Arrow tables of string columns.

    ``bytes_consumed`` is the number of input bytes covered by the header and
    the tables returned so far; at the end it equals the input size.
    """

    def __init__(self, source: Readable, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        if block_size < 1:
            raise ValueError("block_size must be positive")
        self._source = source
        self._block_size = block_size
        self._eof = False
        self.bytes_consumed = 0
        self.names: list[str] = []
        self._pending = b""
        self._next_line = 1
        self._eol = b"\n"
        self._read_header()

    # The stream may return short reads (a network body does): fill the request.
    def _read(self, n: int) -> bytes:
        if self._eof:
            return b""
        parts: list[bytes] = []
        size = 0
        while size < n:
            data = self._source.read(n - size)
            if not data:
                self._eof = True
                break
            parts.append(bytes(data))
            size += len(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _read_header(self) -> None:
        buf = self._read(self._block_size)
        if buf.startswith(BOM):
            buf = buf[len(BOM) :]
            self.bytes_consumed = len(BOM)
        # Blank lines before the header are skipped (Arrow skips blank lines too).
        while True:
            stripped = buf.lstrip(b"\r\n")
            self._next_line += buf.count(b"\n", 0, len(buf) - len(stripped))
            self.bytes_consumed += len(buf) - len(stripped)
            buf = stripped
            if buf or self._eof:
                break
            buf = self._read(self._block_size)
        if not buf:
            raise InvalidInput("the file is empty")
        if b"\n" not in buf and b"\r" in buf:
            self._eol = b"\r"  # old Mac line ends
        while True:
            end, open_quote = scan_exact(buf, self._eol, stop_at_first=True)
            if end >= 0 or self._eof:
                break
            if len(buf) > MAX_ROW_BYTES:
                raise _too_big(self._next_line, open_quote >= 0)
            buf += self._read(min(max(self._block_size, len(buf)), MAX_ROW_BYTES + 1 - len(buf)))
            if b"\n" in buf:
                self._eol = b"\n"
        if end < 0:
            if open_quote >= 0:
                raise _unterminated(self._next_line + buf.count(self._eol, 0, open_quote))
            end = len(buf) - 1
        header = buf[: end + 1]
        self.names = parse_header(header, self._next_line)
        self._next_line += header.count(self._eol)
        self.bytes_consumed += len(header)
        self._pending = buf[end + 1 :]

    def blocks(self) -> Iterator[Block]:
        """Yield the body as blocks of whole rows; raise InvalidInput on an unterminated quote."""
        offset = self.bytes_consumed
        line = self._next_line
        pending = self._pending
        self._pending = b""
        while True:
            # Never hold more than one row over the limit: enough to tell it is too long.
            buf = pending + self._read(min(self._next_read(len(pending)), MAX_ROW_BYTES + 1 - len(pending)))
            if self._eof:
                end = self._final_end(buf, line)
            else:
                end = find_boundary(buf, self._eol)
                if end < 0:
                    if len(buf) > MAX_ROW_BYTES:
                        raise _too_big(line, _in_quotes(buf, self._eol))
                    pending = buf
                    continue
            if end >= 0:
                offset += end + 1
                yield Block(memoryview(buf)[: end + 1], line, offset, self._eol)
                line += count_byte(buf, self._eol, end + 1)
            pending = buf[end + 1 :]
            if self._eof and not pending:
                return

    def _next_read(self, pending: int) -> int:
        """Top a small partial row up to one block; when a row does not fit, double."""
        return self._block_size - pending if pending < self._block_size // 2 else max(pending, self._block_size)

    def _final_end(self, buf: bytes, line: int) -> int:
        """The whole rest is the last block, unless a quote is left open."""
        if b'"' in buf:
            open_quote = open_quote_at_end(buf, self._eol)
            if open_quote >= 0:
                raise _unterminated(line + buf.count(self._eol, 0, open_quote))
        return len(buf) - 1

    def tables(self) -> Iterator[tuple[pa.Table, int]]:
        """Yield each block parsed by Arrow (all columns text), with the input offset where it ends.

        The block's bytes are let go as soon as Arrow has parsed them.
        """
        parse = BlockParser(self.names)
        for block in self.blocks():
            table = parse(block)
            end = block.end
            del block
            yield table, end

    def empty_table(self) -> pa.Table:
        return pa.table({name: pa.array([], TEXT) for name in self.names})


#: How much of the start of a file is read to check it before it is queued (the New task page's
#: preview, the browser's upload component and ``submit``): enough for the header and some rows.
INSPECT_BYTES = 64 * 1024


def read_start(data: bytes, *, whole: bool, rows: bool = True) -> tuple[list[str], pa.Table] | None:
    """The header and the complete rows in the first bytes of a file, read and checked as the worker does.

    ``data`` is the start of the file (``whole``: all of it). The New task page's preview (and,
    with ``rows=False``, the header alone, :meth:`s3task.tasks.TaskService.submit`) call this, so
    they refuse what the worker would refuse in these bytes, with its words (:class:`InvalidInput`),
    and nothing else. A part of a file is cut after its last complete row first: a row cut short
    by the end of ``data`` is no fault. Without ``rows`` the table is empty.

    Returns None when ``data`` is a part that ends inside the header row (a header longer than
    ``data``): only what such a part already shows (not UTF-8, binary) is refused then.
    """
    if not whole:
        skip = len(BOM) if data.startswith(BOM) else 0
        eol = b"\r" if b"\n" not in data and b"\r" in data else b"\n"  # as CsvReader decides
        end = find_boundary(data[skip:], eol)
        if end < 0 or not data[skip : skip + end + 1].strip(b"\r\n"):
            _check_part_of_header(data[skip:])
            return None
        data = data[: skip + end + 1]
    reader = CsvReader(io.BytesIO(data), block_size=max(len(data), 1))
    tables = [table for table, _end in reader.tables()] if rows else []
    return reader.names, pa.concat_tables(tables) if tables else reader.empty_table()


def _check_part_of_header(part: bytes) -> None:
    """parse_header's text checks on the first part of a header row (whose last character may be cut)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(part, final=False)
    except UnicodeDecodeError as e:
        raise _not_text(part, 1 + part.count(b"\n", 0, e.start)) from e
    if b"\x00" in part:
        raise _not_text(part, 1 + part.count(b"\n", 0, part.index(b"\x00")))


class BlockParser:
    """Parses one block of whole rows with Arrow; failures become InvalidInput naming the line."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        # One thread per block: the engine's pipeline already keeps both cores of a small box busy,
        # and Arrow's parse threads only added CPU (10% more for the same 100 MB) and, with them,
        # allocator memory that grew with the length of the file.
        self.read_options = pacsv.ReadOptions(column_names=names, block_size=ARROW_BLOCK_SIZE, use_threads=False)
        self.parse_options = pacsv.ParseOptions(newlines_in_values=True)
        self.convert_options = pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, TEXT), strings_can_be_null=False, quoted_strings_can_be_null=False
        )

    def __call__(self, block: Block) -> pa.Table:
        try:
            return self._read(block, self.read_options)
        except pa.ArrowInvalid as e:
            if str(e).startswith("Empty CSV file"):
                return pa.table({name: pa.array([], TEXT) for name in self.names})
            if "straddling" not in str(e):
                raise diagnose(block, len(self.names), str(e)) from e
        # A row bigger than Arrow's piece size: read this block in one piece.
        whole = pacsv.ReadOptions(column_names=self.names, block_size=len(block.data) + 1, use_threads=False)
        try:
            return self._read(block, whole)
        except pa.ArrowInvalid as e:
            raise diagnose(block, len(self.names), str(e)) from e

    def _read(self, block: Block, read_options: pacsv.ReadOptions) -> pa.Table:
        data: bytes | memoryview = block.data
        if bytes(data[: len(BOM)]) == BOM:
            # Arrow drops a BOM at the start of its input; here it is data (files joined with cat),
            # and must stay, whatever the block boundaries. A blank first line is skipped.
            data = b"\n" + bytes(data)
        return pacsv.read_csv(
            pa.py_buffer(data),
            read_options=read_options,
            parse_options=self.parse_options,
            convert_options=self.convert_options,
        )


def parse_header(header: bytes, line: int) -> list[str]:
    _allow_big_fields()
    try:
        text = header.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _not_text(header, line + header.count(b"\n", 0, e.start)) from e
    if "\x00" in text:
        raise _not_text(header, line)
    names = next(csv.reader(io.StringIO(text, newline="")), [])
    if not names:
        raise InvalidInput(f"{line_label(line)}: the header row is empty")
    if len(names) > MAX_COLUMNS:
        raise InvalidInput(
            f"{line_label(line)}: the header row has {len(names):,} columns; at most {MAX_COLUMNS:,} are supported"
        )
    seen: dict[str, list[int]] = {}
    for i, name in enumerate(names, 1):
        seen.setdefault(name, []).append(i)
    dupes = {name: cols for name, cols in seen.items() if len(cols) > 1}
    if dupes:
        described = "; ".join(
            f"{repr(name) if name else 'an empty name'} (columns {', '.join(map(str, cols))})"
            for name, cols in dupes.items()
        )
        raise InvalidInput(f"the header row repeats column names: {described} — give every column a different name")
    return names


def count_byte(buf: bytes, byte: bytes, end: int) -> int:
    """How many times the one-byte ``byte`` occurs in ``buf[:end]`` (numpy: several times faster than bytes.count)."""
    return int(np.count_nonzero(np.frombuffer(buf, dtype=np.uint8, count=end) == byte[0]))


def find_boundary(buf: bytes, eol: bytes) -> int:
    """Index of the line end that closes the last complete row in ``buf`` (-1 if none).

    ``buf`` starts at the start of a row, outside quotes.
    """
    last = buf.rfind(eol)
    if last < 0 or buf.find(b'"', 0, last) < 0:
        return last
    quotes = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == QUOTE)
    if not _regular(buf, quotes[: np.searchsorted(quotes, last)]):
        return scan_exact(buf, eol)[0]
    pos = last
    while pos >= 0:
        before = int(np.searchsorted(quotes, pos))
        if before % 2 == 0:
            return pos
        # ``pos`` is inside the quoted field opened by quote number before-1: try the line end before it.
        pos = buf.rfind(eol, 0, int(quotes[before - 1]))
    return -1


def _regular(buf: bytes, quotes: np.ndarray) -> bool:
    """True when quote parity reads ``buf`` exactly like Arrow does.

    Under the parity reading, even-numbered quotes open a field (so they follow
    a comma, a line end, the start, or the quote just before: a doubled quote)
    and odd-numbered ones close it (so they are followed by a comma, a line end
    or a quote). Anything else is a stray quote in an unquoted field.
    """
    if not len(quotes):
        return True
    data = np.frombuffer(buf, dtype=np.uint8)
    opening = quotes[0::2]
    closing = quotes[1::2]
    ok_open = _NEIGHBOURS[data[opening[opening > 0] - 1]].all()
    inner = closing[closing + 1 < len(data)]
    return bool(ok_open and _NEIGHBOURS[data[inner + 1]].all())


def _in_quotes(buf: bytes, eol: bytes) -> bool:
    return open_quote_at_end(buf, eol) >= 0


def open_quote_at_end(buf: bytes, eol: bytes) -> int:
    """Index of the quote that opened a value still open at the end of ``buf`` (-1 if none)."""
    quotes = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == QUOTE)
    if not _regular(buf, quotes):
        return scan_exact(buf, eol)[1]
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


def scan_exact(buf: bytes, eol: bytes, stop_at_first: bool = False) -> tuple[int, int]:
    """Follow Arrow's quoting rules through ``buf`` (which starts a row, outside quotes).

    A quote opens a quoted field only at the start of a field; inside one, a
    doubled quote is a quote and a single quote closes it (what follows, up to
    the next comma, is still part of the value). Returns the index of the last
    line end outside quotes (the first one with ``stop_at_first``; -1 if
    none) and the index of the quote left open at the end (-1 if none).
    """
    last_end = -1
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
        if q > 0 and buf[q - 1] not in b",\r\n":
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


def diagnose(block: Block, ncols: int, arrow_message: str) -> InvalidInput:
    """Find the first line of ``block`` that Arrow could not read and say what is wrong with it."""
    data = bytes(block.data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return _not_text(data, block.first_line + data.count(block.eol, 0, e.start))
    _allow_big_fields()
    reader = csv.reader(io.StringIO(text, newline=""))
    start = 0
    try:
        for fields in reader:
            if fields and len(fields) != ncols:
                line = line_label(block.first_line + start)
                return InvalidInput(
                    f"{line}: expected {ncols} fields, found {len(fields)} — "
                    "the row must have one value per column of the header, and a value that contains "
                    "a comma must be in double quotes"
                )
            start = reader.line_num
    except csv.Error as e:
        return InvalidInput(f"{line_label(block.first_line + start)}: {e}")
    if "\x00" in text:
        nul = text.index("\x00")
        return _not_text(data, block.first_line + text.count(block.eol.decode(), 0, nul))
    last = block.first_line + max(0, data.count(block.eol) - 1)
    return InvalidInput(
        f"lines {block.first_line:,}–{last:,}: the file could not be read as CSV ({arrow_message.splitlines()[0]})"
    )


def _allow_big_fields() -> None:
    """Python's csv module refuses values over 128 kB by default; ours may be up to MAX_ROW_BYTES."""
    if csv.field_size_limit() < 2 * MAX_ROW_BYTES:
        csv.field_size_limit(2 * MAX_ROW_BYTES)


def _not_text(data: bytes, line: int) -> InvalidInput:
    if data.startswith(b"PK\x03\x04"):
        return InvalidInput("this is an Excel workbook or a zip file, not a CSV file — " + SAVE_AS_UTF8)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return InvalidInput("the file is UTF-16 text, not UTF-8 — " + SAVE_AS_UTF8)
    if b"\x00" in data[:4096]:
        return InvalidInput(f"{line_label(line)}: this is binary data, not CSV text — " + SAVE_AS_UTF8)
    return InvalidInput(f"{line_label(line)}: not UTF-8 text — " + SAVE_AS_UTF8)


def _unterminated(line: int) -> InvalidInput:
    return InvalidInput(f'{line_label(line)}: unterminated quote — a value starts with " but never ends with one')


def _too_big(line: int, in_quotes: bool) -> InvalidInput:
    limit = f"{MAX_ROW_BYTES >> 20} MB"
    if in_quotes:
        return InvalidInput(
            f"{line_label(line)}: a quoted value runs on for more than {limit} — "
            'probably an unterminated quote (a value that starts with " but never ends with one)'
        )
    return InvalidInput(f"{line_label(line)}: a single row is longer than {limit}; is this a CSV file?")


# --- writing ------------------------------------------------------------------


class _SinkFile:
    """What ``pa.PythonFile`` needs around a sink that only has ``write``.

    The sink gets a view of each of Arrow's output buffers, not a copy, and
    must be done with it (or copy it) before its ``write`` returns: the view
    is released then.
    """

    closed = False

    def __init__(self, sink: Any) -> None:
        self._sink = sink

    def write(self, data: Any) -> int:
        # Arrow's buffer itself, not a copy. Arrow reuses (and reallocates) it for the next rows, so the
        # view is released when the sink returns: a sink that kept it fails loudly instead of writing
        # whatever the memory holds later.
        with memoryview(data) as view:
            self._sink.write(view)
            return view.nbytes

    def flush(self) -> None:
        pass

    def close(self) -> None:  # the sink belongs to the caller
        pass


@dataclass
class Written:
    rows: int = 0
    errors: int = 0


class CsvWriter:
    """Writes DataFrames as one RFC 4180 CSV (header once, UTF-8, CRLF), formulas neutralised.

    Two halves, so that they can run on different threads: :meth:`prepare`
    turns a handler's DataFrame into an Arrow table of text (cheap, no copy
    for text columns) and counts its error rows; :meth:`write_table`
    neutralises formulas and encodes the table into the sink. All sink writes
    happen in ``write_table`` and ``close``.
    """

    def __init__(self, sink: Any, error_column: str | None = None) -> None:
        self._file = pa.PythonFile(_SinkFile(sink), mode="w")
        self._error_column = error_column
        self._writer: pacsv.CSVWriter | None = None
        self._names: list[str] | None = None
        self._schema: pa.Schema | None = None

    def prepare(self, frame: pd.DataFrame | None) -> tuple[pa.Table | None, Written]:
        """The frame as a table of text to write (None if nothing to write), and its row counts."""
        if frame is None or len(frame.columns) == 0:
            return None, Written()
        table = to_text_table(frame)
        if self._names is None:
            self._names = table.column_names
            header = neutralise(pa.array(self._names, pa.string())).to_pylist()
            self._schema = pa.schema([(name, TEXT) for name in header])
        elif table.column_names != self._names:
            if table.num_rows == 0:
                return None, Written()
            raise RuntimeError(f"the task type returned columns {table.column_names} after {self._names}")
        return pa.table(table.columns, schema=self._schema), Written(table.num_rows, self._count_errors(table))

    def write_table(self, table: pa.Table) -> None:
        if self._writer is None:
            assert self._schema is not None
            self._writer = pacsv.CSVWriter(self._file, self._schema, write_options=pacsv.WriteOptions(eol="\r\n"))
        self._writer.write_table(pa.table([neutralise(col) for col in table.columns], schema=table.schema))

    def write(self, frame: pd.DataFrame | None) -> Written:
        """prepare + write_table, on the calling thread."""
        table, written = self.prepare(frame)
        if table is not None:
            self.write_table(table)
        return written

    def _count_errors(self, table: pa.Table) -> int:
        if self._error_column is None or self._error_column not in table.column_names:
            return 0
        col = table.column(self._error_column)
        return int(pc.sum(pc.greater(pc.binary_length(col), 0)).as_py() or 0)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def to_text_table(frame: pd.DataFrame) -> pa.Table:
    """The frame as an Arrow table of string columns (names as text; numbers and booleans as text)."""
    columns = []
    for i in range(frame.shape[1]):
        columns.append(_to_text(frame.iloc[:, i]))
    return pa.table(columns, names=[str(c) for c in frame.columns])


def _to_text(series: pd.Series) -> pa.ChunkedArray | pa.Array:
    try:
        arr = pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # Mixed Python objects: render each as text (slow, but only for such columns).
        arr = pa.array([None if v is None or v is pd.NA or v != v else str(v) for v in series], TEXT)
    if arr.type == TEXT:
        return arr
    if pa.types.is_boolean(arr.type):
        return pc.if_else(arr, "true", "false")
    return pc.cast(arr, TEXT)


def neutralise(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Prefix ``'`` to text that a spreadsheet would run as a formula.

    A value starting with = + - @ tab or CR gets a leading apostrophe unless
    it is a plain number ("-42" and "+3.5" stay as they are). The candidates
    are found from the first byte of each value (numpy, no copy); only they
    are checked against the number pattern, so the cost follows the number of
    risky-looking values, not the size of the column.
    """
    if isinstance(col, pa.ChunkedArray):
        chunks = [_neutralise_chunk(chunk) for chunk in col.chunks]
        if all(new is old for new, old in zip(chunks, col.chunks, strict=True)):
            return col
        return pa.chunked_array(chunks, type=col.type)
    return _neutralise_chunk(col)


def _neutralise_chunk(chunk: pa.Array) -> pa.Array:
    candidates = _formula_candidates(chunk)
    if not len(candidates):
        return chunk
    values = chunk.take(pa.array(candidates))
    formula = _is_formula(values)
    if not formula.any():
        return chunk
    mask = np.zeros(len(chunk), dtype=bool)
    mask[candidates[formula]] = True
    quote, nothing = pa.scalar("'", values.type), pa.scalar("", values.type)
    fixed = pc.binary_join_element_wise(quote, values.filter(pa.array(formula)), nothing)
    return pc.replace_with_mask(chunk, pa.array(mask), fixed)


def _is_formula(values: pa.Array) -> np.ndarray:
    """Which of ``values`` (each non-empty, starting with one of = + - @ tab CR) a spreadsheet would run.

    Only a value that starts with a sign can be a plain number; only those go through the pattern.
    """
    offsets, data = _offsets_and_data(values)
    signed = _SIGN[data[offsets[:-1]]]
    formula = ~signed
    which = np.flatnonzero(signed)
    if len(which):
        maybe = values if len(which) == len(values) else values.take(pa.array(which))
        formula[which] = ~pc.match_substring_regex(maybe, _NUMBER).to_numpy(zero_copy_only=False)
    return formula


def _offsets_and_data(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (one per value, plus the end) and bytes of a string array, without copying."""
    _validity, offsets_buf, data_buf = chunk.buffers()
    offsets_type = np.int64 if chunk.type == pa.large_string() else np.int32
    offsets = np.frombuffer(offsets_buf, dtype=offsets_type)[chunk.offset : chunk.offset + len(chunk) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    return offsets, data


def _formula_candidates(chunk: pa.Array) -> np.ndarray:
    """Positions of the non-empty values whose first byte is one of = + - @ tab CR."""
    if len(chunk) == 0:
        return np.zeros(0, dtype=np.intp)
    if chunk.type not in (pa.string(), pa.large_string()):
        chunk = chunk.cast(TEXT)
    offsets, data = _offsets_and_data(chunk)
    if data.size == 0:
        return np.zeros(0, dtype=np.intp)
    starts = offsets[:-1]
    filled = offsets[1:] > starts
    first = data[np.minimum(starts, len(data) - 1)]
    return np.flatnonzero(filled & _FORMULA_START[first])
