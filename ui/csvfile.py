"""Look at an uploaded file before it becomes a task: is it a CSV, what are its first rows?

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
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import BinaryIO

import pandas as pd

from s3task.csvio import DELIMITERS, INSPECT_BYTES, SAVE_AS_UTF8, InputFormat, detect, read_start
from s3task.errors import InvalidInput

PROBE_BYTES = INSPECT_BYTES  # the browser sends this much of a file for the preview
#: The names a table in text may have: Excel saves "Unicode text" and "Text (Tab delimited)" as .txt.
EXTENSIONS = (".csv", ".txt", ".tsv")
PREVIEW_ROWS = 10

_SIGNATURES = (
    (b"PK\x03\x04", "This is an Excel workbook (or another zip file), not a CSV"),
    (b"\xd0\xcf\x11\xe0", "This is an old-style Excel or Word file, not a CSV"),
    (b"%PDF", "This is a PDF, not a CSV"),
)
_HOW_TO_SAVE = "In Excel or Numbers, choose File › Save As (or Export) › “CSV UTF-8”, then upload that file."


@dataclass
class Inspection:
    """What the New task page shows about an upload; ``problem`` set means refused."""

    name: str
    size: int
    problem: str | None = None
    columns: list[str] = field(default_factory=list)
    preview: pd.DataFrame | None = None
    note: str | None = None
    #: What the first bytes show, and what the preview was read with (the detected format unless
    #: the user chose another); None for a file refused before it is read (not a .csv, too big, not CSV).
    detected: InputFormat | None = None
    input_format: InputFormat | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def inspect_upload(
    name: str,
    size: int,
    stream: BinaryIO,
    *,
    max_bytes: int | None = None,
    input_format: InputFormat | None = None,
) -> Inspection:
    """Check an uploaded file and read its first rows; the stream is rewound afterwards.

    ``stream`` holds the file, or only its first bytes (the browser sends the first 64 KB);
    ``size`` is the size of the whole file. The rows are read with ``input_format``, or with
    the format the first bytes show when it is None.
    """
    result = Inspection(name=name, size=size)
    try:
        result.problem = _refusal(name, size, max_bytes)
        if result.problem is None:
            stream.seek(0)
            _read_preview(result, stream.read(PROBE_BYTES), input_format)
    finally:
        stream.seek(0)
    return result


def _refusal(name: str, size: int, max_bytes: int | None) -> str | None:
    if not name.lower().endswith(EXTENSIONS):
        return f"“{name}” is not a .csv file (nor a .txt or .tsv text file). {_HOW_TO_SAVE}"
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
    result.preview = rows.slice(0, PREVIEW_ROWS).to_pandas()
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
