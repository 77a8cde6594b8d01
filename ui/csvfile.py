"""Look at an uploaded file before it becomes a task: is it a CSV (or a workbook), what are its first rows?

Reads only the start of the file (a fixed-size probe), so a big upload costs no
more to check than a small one. The probe is read by the worker's own reader
(:func:`s3task.csvio.read_start`), so the page refuses what the worker would
refuse in those bytes, in the worker's words, and previews the rows exactly as
the worker will see them (a header ``a,a`` is refused, a quoted line break stays
inside its cell). On top of that it recognises a few formats that are never CSV
(Excel, Word, PDF) by their first bytes, and names them.

The file's delimiter and text encoding are detected from the same bytes
(:func:`s3task.csvio.detect`), or taken as the user chose them; the task carries
the format the preview was read with, so the worker reads the file the same way.

An Excel workbook (a zip, whatever its name; or an encrypted workbook or .xls named as a workbook)
is read by :mod:`ui.workbookfile`, with the worker's workbook reader.
"""

from __future__ import annotations

import io
from typing import BinaryIO

import pandas as pd

from s3task.csvio import DELIMITERS, INSPECT_BYTES, SAVE_AS_UTF8, InputFormat, detect, read_start
from s3task.csvio.sparse import SparseFile
from s3task.errors import InvalidInput

from .inspection import PREVIEW_ROWS, SAMPLE_ROWS, Inspection
from .workbookfile import WORKBOOK_EXTENSIONS, inspect_workbook, is_workbook

__all__ = ["EXTENSIONS", "PREVIEW_ROWS", "PROBE_BYTES", "Inspection", "as_stream", "inspect_upload"]

PROBE_BYTES = INSPECT_BYTES  # the browser sends this much of a file for the preview
#: The names a table in text may have: Excel saves "Unicode text" and "Text (Tab delimited)" as .txt.
TEXT_EXTENSIONS = (".csv", ".txt", ".tsv")
EXTENSIONS = TEXT_EXTENSIONS + WORKBOOK_EXTENSIONS

_SIGNATURES = (
    (b"\xd0\xcf\x11\xe0", "This is an old-style Excel or Word file, not a CSV"),
    (b"%PDF", "This is a PDF, not a CSV"),
)
_HOW_TO_SAVE = (
    "In Excel or Numbers, choose File › Save As (or Export) › “Excel Workbook (.xlsx)” or “CSV UTF-8”, "
    "then upload that file."
)


def inspect_upload(
    name: str,
    size: int,
    stream: BinaryIO | SparseFile,
    *,
    max_bytes: int | None = None,
    input_format: InputFormat | None = None,
) -> Inspection:
    """Check an uploaded file and read its first rows; the stream is rewound afterwards.

    ``stream`` holds the file, or only its first bytes (the browser sends the first 64 KB), or for a
    workbook the byte ranges the browser sent (a :class:`~s3task.csvio.sparse.SparseFile`);
    ``size`` is the size of the whole file. The rows are read with ``input_format`` (where it is of
    the file's kind), or with the format the first bytes show when it is None.
    """
    result = Inspection(name=name, size=size)
    try:
        result.problem = _refusal(name, size, max_bytes)
        if result.problem is None:
            stream.seek(0)
            head = stream.read(PROBE_BYTES)
            stream.seek(0)
            if is_workbook(name, head):
                inspect_workbook(result, stream, input_format, SAMPLE_ROWS)
            else:
                _read_preview(result, head, input_format if not (input_format and input_format.is_workbook) else None)
    finally:
        stream.seek(0)
    return result


def _refusal(name: str, size: int, max_bytes: int | None) -> str | None:
    if not name.lower().endswith(EXTENSIONS):
        return (
            f"“{name}” is not a .csv file (nor a .txt or .tsv text file) or an Excel workbook (.xlsx, .xlsm). "
            + _HOW_TO_SAVE
        )
    if size == 0:
        return "The file is empty. A CSV needs at least a header row with the column names."
    if max_bytes is not None and size > max_bytes:
        return f"The file is {size / 2**20:.0f} MB; the limit is {max_bytes / 2**20:.0f} MB."
    return None


def _read_preview(result: Inspection, head: bytes, chosen: InputFormat | None) -> None:
    for magic, what in _SIGNATURES:
        if head.startswith(magic):
            result.problem = f"{what}. {_HOW_TO_SAVE}"
            return
    whole = len(head) >= result.size
    result.detected = detect(head, whole=whole)
    result.input_format = chosen or result.detected
    try:
        start = read_start(head, whole=whole, input_format=result.input_format)
    except InvalidInput as e:
        result.problem = _worker_refusal(e.message, head)
        return
    if start is None:
        result.note = (
            f"The header row is longer than the first {PROBE_BYTES // 1024} KB, so there is no preview here; "
            "the whole file is checked when the task runs."
        )
        result.preview = pd.DataFrame()
        return
    names, rows = start
    result.columns = names
    result.rows = rows.slice(0, SAMPLE_ROWS).to_pandas()
    result.preview = result.rows.head(PREVIEW_ROWS)
    others = [DELIMITERS[d] for d in DELIMITERS if d != result.input_format.delimiter and d in names[0]]
    if len(names) == 1 and others:
        result.note = (
            f"Only one column was found, and its name contains {' and '.join(others)}. If the values are "
            "separated by one of those, choose it under “Values separated by”."
        )
    elif whole and rows.num_rows == 0:
        result.note = "The file has a header row but no data rows; the task will produce an empty output."


def _worker_refusal(message: str, head: bytes) -> str:
    """The worker's own words for what is wrong, and how to fix it when that is saving the file again."""
    binary = b"\x00" in head and "binary" not in message
    lead = "This file contains binary data, so it is not a CSV" if binary else "This file cannot be processed"
    text = f"{lead}: {message}."
    if binary or SAVE_AS_UTF8 in message:
        text += f" {_HOW_TO_SAVE}"
    return text


def as_stream(data: bytes) -> BinaryIO:
    return io.BytesIO(data)
