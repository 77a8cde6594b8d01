"""Streaming CSV in and out, with Arrow doing the heavy lifting.

Reading: :class:`CsvReader` (:mod:`.reader`) cuts the input into blocks of whole rows itself and parses
each with Arrow's multithreaded parser, for exact progress, exact places in error messages and bounded
memory; its module says how. A CSV is read with an :class:`InputFormat` (comma, semicolon, tab or pipe;
UTF-8, UTF-16 or Windows-1252), detected from its first bytes by :func:`detect` (:mod:`.dialect`).

Writing: :class:`CsvWriter` turns handler output into RFC 4180 CSV (UTF-8 with
a byte-order mark, so Excel reads it as UTF-8; CRLF; header once) with
``pyarrow.csv.CSVWriter``, after casting every column to text and neutralising
spreadsheet formulas reversibly (see :func:`neutralise`: a value that already
starts with ``'`` gets one more, so the exact values can be recovered).

The package: this module holds the names the rest of s3task imports; :mod:`.reader` is the streaming
reader (:class:`CsvReader`, :func:`read_start`), :mod:`.common` holds the limits and shared constants,
:mod:`.boundary` finds row boundaries, :mod:`.parsing` parses a block with Arrow and explains
what it refuses, :mod:`.dialect` detects and transcodes the input format, :mod:`.writing` is the
writer. An Excel workbook has a reader of the same shape, which the engine uses for an input whose
:class:`InputFormat` (:mod:`s3task.input_format`) is a workbook's: :mod:`.workbook` opens and checks the container
and lists its sheets, :mod:`.sheetreader` reads a sheet in blocks (:class:`~s3task.csvio.sheetreader.WorkbookReader`),
:mod:`.sheetcells` reads the cells of a piece of a sheet as Excel shows them, :mod:`.sheetblocks` gathers
them into blocks sized by cells; it needs a seekable file (a zip's directory is at its end), which
:func:`~s3task.csvio.spool.spooled` makes of a stream, or a :class:`~s3task.csvio.sparse.SparseFile` of the
byte ranges a browser sent for a preview.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..input_format import (
    CSV,
    DELIMITERS,
    DETECT,
    ENCODINGS,
    EXCEL_ROWS,
    KINDS,
    XLSX,
    AskedFormat,
    FormatRequest,
    InputFormat,
    detect_kind,
    parse_input_format,
)
from .common import (
    ARROW_BLOCK_SIZE,
    BOM,
    DEFAULT_BLOCK_SIZE,
    MAX_COLUMNS,
    MAX_ROW_BYTES,
    QUOTE,
    SAVE_AS_UTF8,
    Readable,
    line_label,
)
from .dialect import detect, resolve
from .reader import INSPECT_BYTES, CsvReader, read_start

if TYPE_CHECKING:
    from .boundary import count_byte, find_boundary, open_quote_at_end, scan_exact
    from .common import TEXT
    from .parsing import Block, BlockParser, diagnose, parse_header
    from .sheetreader import WorkbookReader
    from .spool import spooled
    from .writing import CsvWriter, Written, neutralise, to_text_table

#: The names this package offers that need pyarrow or numpy, and the module that holds each: imported
#: when first asked for (``__getattr__``), so that the formats and limits are read without them.
_HEAVY = {
    "count_byte": "boundary",
    "find_boundary": "boundary",
    "open_quote_at_end": "boundary",
    "scan_exact": "boundary",
    "TEXT": "common",
    "Block": "parsing",
    "BlockParser": "parsing",
    "diagnose": "parsing",
    "parse_header": "parsing",
    "WorkbookReader": "sheetreader",
    "spooled": "spool",
    "CsvWriter": "writing",
    "Written": "writing",
    "neutralise": "writing",
    "to_text_table": "writing",
}


def __getattr__(name: str) -> Any:
    module = _HEAVY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ARROW_BLOCK_SIZE",
    "BOM",
    "CSV",
    "DEFAULT_BLOCK_SIZE",
    "DELIMITERS",
    "DETECT",
    "ENCODINGS",
    "EXCEL_ROWS",
    "INSPECT_BYTES",
    "KINDS",
    "MAX_COLUMNS",
    "MAX_ROW_BYTES",
    "QUOTE",
    "SAVE_AS_UTF8",
    "TEXT",
    "XLSX",
    "AskedFormat",
    "Block",
    "BlockParser",
    "CsvReader",
    "CsvWriter",
    "FormatRequest",
    "InputFormat",
    "Readable",
    "WorkbookReader",
    "Written",
    "count_byte",
    "detect",
    "detect_kind",
    "diagnose",
    "find_boundary",
    "line_label",
    "neutralise",
    "open_quote_at_end",
    "parse_header",
    "parse_input_format",
    "read_start",
    "resolve",
    "scan_exact",
    "spooled",
    "to_text_table",
]
