"""The streaming CSV reader: :class:`CsvReader`, and :func:`read_start` for a file's first bytes.

:class:`CsvReader` pulls the input from a plain ``read(n)`` stream and
cuts it into *blocks of whole rows* itself, then parses each block with
Arrow's multithreaded parser (every column as string). Cutting the blocks
ourselves, instead of handing the stream to ``pyarrow.csv.open_csv``, buys:

- exact progress: a block ends on a row boundary, so the bytes consumed by the
  rows parsed so far are known to the byte (``open_csv`` reads tens of blocks
  ahead of the rows it has returned, and says nothing about where they end);
- exact places in error messages: each block knows the file line it starts on
  and the row as Excel numbers it, and a block Arrow refuses is re-read by
  Python's ``csv`` module to find the record and say what is wrong with it
  (:mod:`.rows`; the rows before it are read first);
- rows bigger than the block size (a 5 MB cell) just make that one block
  bigger, up to :data:`MAX_ROW_BYTES`;
- bounded memory: no read-ahead beyond the one block being parsed.

A row boundary is a line end outside quotes. The fast path counts quote
characters (numpy) and checks that every quote sits where RFC 4180 puts one
(opening a field, closing it, or doubled inside it); only then is quote parity
the same as Arrow's own reading. Otherwise (stray quotes such as ``27" wide``)
a slower exact scan that follows Arrow's quoting rules decides.

Delimiter and encoding: a CSV is read with an :class:`InputFormat` (comma, semicolon, tab or pipe;
UTF-8, UTF-16 or Windows-1252), detected from its first bytes by :func:`detect` (:mod:`.dialect`).
Another encoding than UTF-8 is transcoded to UTF-8 as it streams, and block ends are counted back
in the file's own bytes (:func:`input_bytes`), so progress stays exact.

:class:`CsvReader` looks :data:`~s3task.csvio.MAX_ROW_BYTES` up in the package when it reads, so setting
``csvio.MAX_ROW_BYTES`` (as a test does) still bounds its rows.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from ..errors import InvalidInput
from ..input_format import InputFormat
from .common import BOM, DEFAULT_BLOCK_SIZE, Readable, too_big
from .dialect import Transcoder, check_start, input_bytes, transcode_part

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from .parsing import Block


def _max_row_bytes() -> int:
    """The package's :data:`~s3task.csvio.MAX_ROW_BYTES`, as it is now."""
    from .. import csvio

    return csvio.MAX_ROW_BYTES


class CsvReader:
    """Reads a CSV stream as a header plus a sequence of Arrow tables of string columns.

    ``bytes_consumed`` is the number of input bytes covered by the header and
    the tables returned so far; at the end it equals the input size. ``input_format``
    (default: comma, UTF-8) says how the file is written; text in another encoding is
    transcoded to UTF-8 as it is read, and counted in the input's own bytes.
    """

    #: Set ``number_rows`` before ``tables()`` to have ``last_rows`` hold each yielded table's rows' numbers as
    #: Excel numbers them (:func:`.rows.block_rows`), for the errors workbook (s3task.exports.errorbook).
    number_rows, last_rows = False, cast("np.ndarray | None", None)

    def __init__(
        self, source: Readable, block_size: int = DEFAULT_BLOCK_SIZE, input_format: InputFormat | None = None
    ) -> None:
        if block_size < 1:
            raise ValueError("block_size must be positive")
        self.input_format = input_format or InputFormat()
        self._encoding = self.input_format.encoding
        self._delimiter = self.input_format.delimiter_byte
        self._source: Readable = source if self._encoding == "utf-8" else Transcoder(source, self._encoding)
        self._block_size = block_size
        self._eof = False
        self.bytes_consumed = 0
        self.names: list[str] = []
        self._pending = b""
        self._next_line = 1
        self._next_row = 1  # as Excel numbers rows: records, blank ones too, from the file's start
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

    def _units(self, data: bytes | memoryview) -> int:
        """The input bytes that the (UTF-8) ``data`` was read from."""
        return input_bytes(data, self._encoding)

    def _read_header(self) -> None:
        from .boundary import scan_exact
        from .parsing import parse_header
        from .rows import unclosed_at_end

        buf = self._read(self._block_size)
        if buf.startswith(BOM):  # a UTF-16 file's byte-order mark arrives transcoded, as this one
            buf = buf[len(BOM) :]
            self.bytes_consumed = self._units(BOM)
        # Blank lines before the header are skipped (Arrow skips blank lines too).
        while True:
            stripped = buf.lstrip(b"\r\n")
            self._next_line += buf.count(b"\n", 0, len(buf) - len(stripped))
            self._next_row += buf.count(b"\n", 0, len(buf) - len(stripped))
            self.bytes_consumed += self._units(memoryview(buf)[: len(buf) - len(stripped)])
            buf = stripped
            if buf or self._eof:
                break
            buf = self._read(self._block_size)
        if not buf:
            raise InvalidInput("the file is empty")
        if b"\n" not in buf and b"\r" in buf:
            self._eol = b"\r"  # old Mac line ends
        while True:
            end, open_quote = scan_exact(buf, self._eol, stop_at_first=True, delimiter=self._delimiter)
            if end >= 0 or self._eof:
                break
            if len(buf) > _max_row_bytes():
                raise too_big(self._next_line, open_quote >= 0, _max_row_bytes())
            buf += self._read(min(max(self._block_size, len(buf)), _max_row_bytes() + 1 - len(buf)))
            if b"\n" in buf:
                self._eol = b"\n"
        if end < 0:
            if open_quote >= 0:
                raise unclosed_at_end(buf, open_quote, [], self._next_line, self._next_row, self._eol, self._delimiter)
            end = len(buf) - 1
        header = buf[: end + 1]
        self.names = parse_header(header, self._next_line, self._delimiter)
        self._next_line += header.count(self._eol)
        self._next_row += 1
        self.bytes_consumed += self._units(header)
        self._pending = buf[end + 1 :]

    def blocks(self) -> Iterator[Block]:
        """Yield the body as blocks of whole rows; raise InvalidInput on an unterminated quote."""
        from .boundary import _in_quotes, count_byte, find_boundary
        from .parsing import Block
        from .rows import BadRow

        offset = self.bytes_consumed
        line = self._next_line
        pending = self._pending
        self._pending = b""
        while True:
            # Never hold more than one row over the limit: enough to tell it is too long.
            buf = pending + self._read(min(self._next_read(len(pending)), _max_row_bytes() + 1 - len(pending)))
            if self._eof:
                try:
                    end = self._final_end(buf, line)
                except BadRow as bad:  # the rows before the open quote are read first
                    if good := bad.good_bytes:
                        yield Block(memoryview(buf)[:good], line, offset + self._units(buf[:good]), self._eol,
                                    self._delimiter, self._next_row)  # fmt: skip
                    raise
            else:
                end = find_boundary(buf, self._eol, self._delimiter)
                if end < 0:
                    if len(buf) > _max_row_bytes():
                        raise too_big(line, _in_quotes(buf, self._eol, self._delimiter), _max_row_bytes())
                    pending = buf
                    continue
            if end >= 0:
                offset += self._units(memoryview(buf)[: end + 1])
                lines = count_byte(buf, self._eol, end + 1)
                yield Block(memoryview(buf)[: end + 1], line, offset, self._eol, self._delimiter, self._next_row, lines)
                line += lines
            pending = buf[end + 1 :]
            if self._eof and not pending:
                return

    def _next_read(self, pending: int) -> int:
        """Top a small partial row up to one block; when a row does not fit, double."""
        return self._block_size - pending if pending < self._block_size // 2 else max(pending, self._block_size)

    def _final_end(self, buf: bytes, line: int) -> int:
        """The whole rest is the last block, unless a quote is left open."""
        from .boundary import open_quote_at_end
        from .rows import unclosed_at_end

        if b'"' in buf:
            open_quote = open_quote_at_end(buf, self._eol, self._delimiter)
            if open_quote >= 0:
                raise unclosed_at_end(buf, open_quote, self.names, line, self._next_row, self._eol, self._delimiter)
        return len(buf) - 1

    def tables(self) -> Iterator[tuple[pa.Table, int]]:
        """Yield each block parsed by Arrow (all columns text), with the input offset where it ends.

        The block's bytes are let go as soon as Arrow has parsed them. A block with a bad row yields
        the rows before it first (so they count as read), then raises.
        """
        from .parsing import BlockParser
        from .rows import BadRow, blank_rows, block_rows

        parse = BlockParser(self.names, self._delimiter)
        for block in self.blocks():
            try:
                table = parse(block)
            except BadRow as bad:
                if bad.good_bytes:
                    good = block.data[: bad.good_bytes]
                    yield parse(replace(block, data=good)), block.end - self._units(block.data[bad.good_bytes :])
                raise
            if self.number_rows:
                self.last_rows = block_rows(block, table.num_rows)
            # Rows as Excel counts them: Arrow's, and the blank lines it skipped (looked for only when rows and
            # line ends differ: blank lines, line breaks in values, or a last row without its line end).
            self._next_row += table.num_rows
            if table.num_rows != block.lines:
                self._next_row += blank_rows(block.data, self._eol, self._delimiter)
            end = block.end
            del block
            yield table, end

    def empty_table(self) -> pa.Table:
        import pyarrow as pa

        from .common import TEXT

        return pa.table({name: pa.array([], TEXT) for name in self.names})


#: How much of the start of a file is read to check it before it is queued (the New task page's
#: preview, the browser's upload component and ``submit``): enough for the header and some rows.
INSPECT_BYTES = 64 * 1024


def read_start(
    data: bytes, *, whole: bool, rows: bool = True, input_format: InputFormat | None = None
) -> tuple[list[str], pa.Table] | None:
    """The header and the complete rows in the first bytes of a file, read and checked as the worker does.

    ``data`` is the start of the file (``whole``: all of it). The New task page's preview (and,
    with ``rows=False``, the header alone, :meth:`s3task.tasks.TaskService.submit`) call this, so
    they refuse what the worker would refuse in these bytes, with its words (:class:`InvalidInput`),
    and nothing else. A part of a file is cut after its last complete row first: a row cut short
    by the end of ``data`` is no fault. Without ``rows`` the table is empty.

    Returns None when ``data`` is a part that ends inside the header row (a header longer than
    ``data``): only what such a part already shows (not UTF-8, binary) is refused then.

    ``input_format`` (default: comma, UTF-8) is the format the worker will read the file with; a
    part in another encoding is transcoded first (a character cut by its end left out), as the
    worker's reader transcodes the whole.
    """
    import pyarrow as pa

    from .boundary import find_boundary
    from .parsing import check_part_of_header

    input_format = input_format or InputFormat()
    check_start(data, input_format.encoding)  # a choice the file's byte-order mark contradicts: said plainly
    if input_format.encoding != "utf-8":
        data = transcode_part(data, input_format.encoding, whole=whole)
        input_format = InputFormat(input_format.delimiter)
    delimiter = input_format.delimiter_byte
    if not whole:
        skip = len(BOM) if data.startswith(BOM) else 0
        eol = b"\r" if b"\n" not in data and b"\r" in data else b"\n"  # as CsvReader decides
        end = find_boundary(data[skip:], eol, delimiter)
        if end < 0 or not data[skip : skip + end + 1].strip(b"\r\n"):
            check_part_of_header(data[skip:])
            return None
        data = data[: skip + end + 1]
    reader = CsvReader(io.BytesIO(data), block_size=max(len(data), 1), input_format=input_format)
    tables = [table for table, _end in reader.tables()] if rows else []
    return reader.names, pa.concat_tables(tables) if tables else reader.empty_table()
