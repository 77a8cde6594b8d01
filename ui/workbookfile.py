"""Look at an uploaded Excel workbook before it becomes a task: its sheets, the header row, the first rows.

The worker's own reader (:class:`s3task.csvio.sheetreader.WorkbookReader`) reads it, so the page lists
the sheets, takes the header row and shows the rows as the task will read them, and refuses what the
reader refuses, in its sentence. The file is the whole upload (Streamlit's uploader: read directly,
within the reader's limits on what a part may unpack to), or, with the direct upload, a
:class:`~s3task.csvio.sparse.SparseFile` over the byte ranges the browser sent (the zip's end, where its
directory is, and the start of each part a preview needs: ``ui/direct_upload.js``). Then the rows are
those the bytes sent hold, a sheet's row count is the one its ``<dimension>`` says (else it is counted
when the task runs), and a text beyond the shared strings sent shows as a marker, never as another text.

The task carries the sheet and the header row the preview took (``input_format``), so the worker reads
exactly that; submitting checks the whole stored file with the same reader before the task is queued.
"""

from __future__ import annotations

from typing import IO, cast

import pyarrow as pa
import pyarrow.compute as pc

from s3task.csvio import XLSX, InputFormat
from s3task.csvio.sheetreader import WorkbookReader
from s3task.csvio.sparse import NOT_SENT_TEXT, SparseFile
from s3task.csvio.workbook import Sheet, Workbook, check_signature, open_workbook
from s3task.errors import InvalidInput, NotSent

from .inspection import PREVIEW_ROWS, Inspection

#: The names a workbook may have (an .xls or .xlsb is taken only to be refused in the reader's words).
WORKBOOK_EXTENSIONS = (".xlsx", ".xlsm", ".xls", ".xlsb")
DATES = "Dates and times are shown as ISO 8601 (2026-03-01, 2026-03-01T14:30:00), as the task reads them."
_ZIP, _OLE2 = b"PK\x03\x04", b"\xd0\xcf\x11\xe0"
_LATER = "the whole file is checked when you submit"


def is_workbook(name: str, head: bytes) -> bool:
    """Read as a workbook: a zip (a workbook is one, whatever its name), or an OLE2 file named as a workbook
    (an encrypted workbook, an old .xls; one named .csv may as well be a Word file, and is refused as no CSV)."""
    return head.startswith(_ZIP) or (head.startswith(_OLE2) and name.lower().endswith(WORKBOOK_EXTENSIONS))


def sheet_label(sheet: Sheet) -> str:
    """How the choice of sheet names one: "Customers · 5 rows", "Prices · rows: counted when the task runs"."""
    hidden = " (hidden)" if not sheet.visible else ""
    if sheet.rows is None:
        return f"{sheet.name}{hidden} · rows: counted when the task runs"
    return f"{sheet.name}{hidden} · {sheet.rows:,} row{'s' if sheet.rows != 1 else ''}"


def header_line(row: int) -> str:
    """The line that says which row the header was taken from."""
    return f"Header taken from row {row:,}" + (" — the rows above it are skipped" if row > 1 else "")


def inspect_workbook(result: Inspection, source: IO[bytes] | SparseFile, chosen: InputFormat | None, rows: int) -> None:
    """Fill ``result`` in from the workbook in ``source``: its sheets, the format taken, the first ``rows`` rows.

    ``chosen``: the sheet and header row asked for (the user's, or a task's the form was filled in from);
    a sheet the workbook does not have gives the one it opens on in Excel, and a note."""
    result.partial = isinstance(source, SparseFile)
    asked = chosen if chosen is not None and chosen.is_workbook else InputFormat(kind=XLSX)
    result.detected = result.input_format = asked
    try:
        if isinstance(source, SparseFile):
            check_signature(source.sent())  # an OLE2 file: its directory is among the ranges the browser sent
        book = open_workbook(cast(IO[bytes], source))  # a SparseFile reads as a file does
    except InvalidInput as e:
        result.problem = sentence(e.message)
        return
    except NotSent:  # the zip's directory was not among the bytes sent (a zip64, a very long one)
        result.note = f"The browser sent too little of this workbook for a preview; {_LATER}."
        return
    result.sheets = book.sheets
    result.input_format = _asked_of(book, asked, result)
    if isinstance(source, SparseFile):
        source.ran_out = False  # from here on: whether the part of this sheet sent ran out
    _read_rows(result, book, rows, source)


def _asked_of(book: Workbook, asked: InputFormat, result: Inspection) -> InputFormat:
    """The sheet asked for, or the one the workbook opens on (with a note when the one asked for is not there)."""
    sheet, header = asked.sheet, asked.header_row
    if sheet is not None and sheet not in [s.name for s in book.sheets]:
        result.note = f"This workbook has no sheet {sheet!r}, so the sheet it opens on is shown."
        sheet, header = None, None
    if sheet is None:
        sheet = book.sheet(None).name if any(s.visible for s in book.sheets) else None
        opened = next((s for s in book.sheets if s.name == book.active and s.visible), None)
        if sheet is not None and opened is not None and opened.name != sheet:  # notes opened on, a table beside
            taken = next(s for s in book.sheets if s.name == sheet)
            result.note = (
                f"This workbook opens on its sheet {opened.name!r} ({_rows(opened.rows)}); the table on "
                f"{sheet!r} ({_rows(taken.rows)}) is shown. Choose another sheet above if that is not the one."
            )
    return InputFormat(kind=XLSX, sheet=sheet, header_row=header)


def _rows(count: int | None) -> str:
    return "rows not counted" if count is None else f"{count:,} row{'s' if count != 1 else ''}"


def _read_rows(result: Inspection, book: Workbook, rows: int, source: IO[bytes] | SparseFile) -> None:
    """The first rows of the sheet, as the reader gives them; what it refuses, or (cut short) a note."""
    assert result.input_format is not None
    asked = result.input_format
    try:
        with WorkbookReader(book, asked.sheet, asked.header_row) as reader:
            result.input_format = InputFormat(kind=XLSX, sheet=reader.sheet, header_row=reader.header_row)
            result.columns = reader.names
            first = _first_rows(reader, rows)
    except InvalidInput as e:
        if _ran_out(source):  # perhaps only because the rows the reader needed were not sent
            result.note = f"{sentence(e.message)} The preview reads only the start of this workbook; {_LATER}."
        else:
            result.problem = sentence(e.message)
        return
    except NotSent:  # a part the sheet needs (its styles, the sheet itself) was not among the bytes sent
        result.note = f"The browser sent too little of this sheet for a preview; {_LATER}."
        return
    result.rows = first.to_pandas()  # whole cells: the step builder's preview counts and checks these
    result.preview = _shortened(first.slice(0, PREVIEW_ROWS)).to_pandas()
    result.note = _notes(result.note, first, _ran_out(source))


#: The rows read hold at most this much of the sheet's text (a workbook whose cells name one long text filled
#: 656 MB before), each cell whole; the table shown cuts a cell at this many characters: its rows are for the eye.
PREVIEW_TEXT = 16 << 20
PREVIEW_CELL = 1_000


def _first_rows(reader: WorkbookReader, rows: int) -> pa.Table:
    """The sheet's first ``rows`` rows, or as many as :data:`PREVIEW_TEXT` holds (at least one), cells whole."""
    tables: list[pa.Table] = []
    count, held = 0, 0
    for table, _end in reader.tables():
        room = PREVIEW_TEXT - held
        full = table.num_rows and table.nbytes > room
        if full:  # the rows that fit, by the block's bytes a row
            table = table.slice(0, max(int(room * table.num_rows // table.nbytes), 0 if count else 1))
        tables.append(table)
        count, held = count + table.num_rows, held + table.nbytes
        if full or count >= rows:
            break
    if not tables:
        return reader.empty_table()
    kept = pa.concat_tables(tables).slice(0, rows)
    # A copy of the rows kept: a slice would hold the reader's whole block (its long texts) for the session.
    return kept.take(pa.array(range(kept.num_rows), pa.int64()))


def _shortened(table: pa.Table) -> pa.Table:
    """Each cell cut to :data:`PREVIEW_CELL` characters, a "…" where it was cut."""
    columns = []
    for column in table.columns:
        long = pc.greater(pc.utf8_length(column), PREVIEW_CELL)
        ellipsis, nothing = pa.scalar("…", column.type), pa.scalar("", column.type)
        cut = pc.binary_join_element_wise(pc.utf8_slice_codeunits(column, 0, PREVIEW_CELL), ellipsis, nothing)
        columns.append(pc.if_else(long, cut, column))
    return pa.Table.from_arrays(columns, names=table.column_names)


def _ran_out(source: IO[bytes] | SparseFile) -> bool:
    return isinstance(source, SparseFile) and source.ran_out


def _notes(note: str | None, first: pa.Table, ran_out: bool) -> str | None:
    said = [note] if note else []
    if any(NOT_SENT_TEXT in column.to_pylist() for column in first.columns):
        said.append(
            f"A cell shown as {NOT_SENT_TEXT} holds a text that is further on in the file than the part the browser "
            "sent for this preview; the task reads it."
        )
    if ran_out and first.num_rows == 0:
        said.append(f"The part of the sheet the browser sent holds no rows under the header; {_LATER}.")
    return " ".join(said) or None


def sentence(message: str) -> str:
    """The reader's words as a sentence of the page's: "The workbook is protected … again."."""
    text = message[:1].upper() + message[1:]
    return text if text.endswith(".") else text + "."
