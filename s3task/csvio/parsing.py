"""One block of whole rows parsed by Arrow, the header row, and what is wrong with input Arrow refuses."""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.csv as pacsv

from ..errors import InvalidInput
from .common import (
    ARROW_BLOCK_SIZE,
    BOM,
    CHOOSE_ENCODING,
    MAX_COLUMNS,
    MAX_ROW_BYTES,
    SAVE_AS_UTF8,
    TEXT,
    line_label,
)


@dataclass
class Block:
    """Whole rows of the input: ``data`` starts on ``first_line`` (row ``first_row`` as Excel numbers
    rows: the header is row 1 when it is the file's first line) and ends at byte ``end`` of the file."""

    data: bytes | memoryview
    first_line: int
    end: int
    eol: bytes
    delimiter: bytes = b","
    first_row: int = 2
    #: Line ends in ``data``.
    lines: int = 0


class BlockParser:
    """Parses one block of whole rows with Arrow; failures become InvalidInput naming the line."""

    def __init__(self, names: list[str], delimiter: bytes = b",") -> None:
        self.names = names
        # One thread per block: the engine's pipeline already keeps both cores of a small box busy,
        # and Arrow's parse threads only added CPU (10% more for the same 100 MB) and, with them,
        # allocator memory that grew with the length of the file.
        self.parse_options = pacsv.ParseOptions(delimiter=delimiter.decode(), newlines_in_values=True)
        self.convert_options = pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, TEXT), strings_can_be_null=False, quoted_strings_can_be_null=False
        )

    def __call__(self, block: Block) -> pa.Table:
        try:
            return self._read(block)
        except pa.ArrowInvalid as e:
            if str(e).startswith("Empty CSV file"):
                return pa.table({name: pa.array([], TEXT) for name in self.names})
            raise diagnose(block, self.names, str(e)) from e

    def _read(self, block: Block) -> pa.Table:
        data: bytes | memoryview = block.data
        if bytes(data[: len(BOM)]) == BOM:
            # Arrow drops a BOM at the start of its input; here it is data (files joined with cat),
            # and must stay, whatever the block boundaries. A blank first line is skipped.
            data = b"\n" + bytes(data)
        # The block in one piece: it holds whole rows already, and on one thread Arrow's pieces only cost
        # (1 MB pieces took 12% more CPU to parse a 100 MB file, and each piece became a chunk of every
        # column that the writer's formula check and encoder then handled one by one).
        size = max(ARROW_BLOCK_SIZE, memoryview(data).nbytes + 1)
        read_options = pacsv.ReadOptions(column_names=self.names, block_size=size, use_threads=False)
        return pacsv.read_csv(
            pa.py_buffer(data),
            read_options=read_options,
            parse_options=self.parse_options,
            convert_options=self.convert_options,
        )


def parse_header(header: bytes, line: int, delimiter: bytes = b",") -> list[str]:
    _allow_big_fields()
    try:
        text = header.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _not_text(header, line + header.count(b"\n", 0, e.start)) from e
    if "\x00" in text:
        raise _not_text(header, line)
    records = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter.decode())
    names = next(records, [])
    if _more_records(records):
        # The line end was taken from the file's first LF, and the "header line" up to it
        # holds several CR-ended rows: reading on would silently drop them.
        raise InvalidInput(
            f"{line_label(line)}: the header row runs into the next rows — the file mixes line endings "
            "(CR and LF, as Excel for Mac's 'CSV (Macintosh)' does); save it again as 'CSV UTF-8'"
        )
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


def _more_records(records: Iterator[list[str]]) -> bool:
    try:
        return any(any(cell for cell in row) or row for row in records)
    except csv.Error:  # e.g. a quote opened on the same "line": more text than one record either way
        return True


def diagnose(block: Block, names: list[str], arrow_message: str) -> InvalidInput:
    """Find the first record of ``block`` that Arrow could not read and say what is wrong with it
    (a :class:`~.rows.BadRow` when it is a record: its row, its first cell, the cause)."""
    from .rows import diagnose_rows

    data = bytes(block.data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return _not_text(data, block.first_line + data.count(block.eol, 0, e.start))
    _allow_big_fields()
    found = diagnose_rows(text, names, block.first_line, block.first_row, block.delimiter.decode())
    if isinstance(found, InvalidInput):
        return found
    if found is not None:
        return InvalidInput(f"{line_label(found[0])}: {found[1]}")
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
        return InvalidInput(
            "the file is UTF-16 text (Excel's 'Unicode text'), read as UTF-8 — choose UTF-16 as its text encoding "
            "when you submit it, or " + SAVE_AS_UTF8
        )
    if b"\x00" in data[:4096]:
        return InvalidInput(f"{line_label(line)}: this is binary data, not CSV text — " + SAVE_AS_UTF8)
    return InvalidInput(f"{line_label(line)}: not UTF-8 text — " + CHOOSE_ENCODING)


def check_part_of_header(part: bytes) -> None:
    """parse_header's text checks on the first part of a header row (whose last character may be cut)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(part, final=False)
    except UnicodeDecodeError as e:
        raise _not_text(part, 1 + part.count(b"\n", 0, e.start)) from e
    if b"\x00" in part:
        raise _not_text(part, 1 + part.count(b"\n", 0, part.index(b"\x00")))
