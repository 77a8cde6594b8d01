"""Look at an uploaded file before it becomes a task: is it a CSV, what are its first rows?

Reads only the start of the file (the first rows and a fixed-size probe), so a
big upload costs no more to check than a small one.
"""

from __future__ import annotations

import codecs
import csv
import io
from dataclasses import dataclass, field
from typing import BinaryIO

import pandas as pd

PROBE_BYTES = 64 * 1024
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

    @property
    def ok(self) -> bool:
        return self.problem is None


def inspect_upload(name: str, size: int, stream: BinaryIO, *, max_bytes: int | None = None) -> Inspection:
    """Check an uploaded file and read its first rows; the stream is rewound afterwards."""
    result = Inspection(name=name, size=size)
    try:
        result.problem = _refusal(name, size, stream, max_bytes)
        if result.problem is None:
            _read_preview(result, stream)
    finally:
        stream.seek(0)
    return result


def _refusal(name: str, size: int, stream: BinaryIO, max_bytes: int | None) -> str | None:
    if not name.lower().endswith(".csv"):
        return f"“{name}” is not a .csv file. {_HOW_TO_SAVE}"
    if size == 0:
        return "The file is empty. A CSV needs at least a header row with the column names."
    if max_bytes is not None and size > max_bytes:
        return f"The file is {size / 2**20:.0f} MB; the limit is {max_bytes / 2**20:.0f} MB."
    stream.seek(0)
    head = stream.read(PROBE_BYTES)
    for magic, what in _SIGNATURES:
        if head.startswith(magic):
            return f"{what}. {_HOW_TO_SAVE}"
    if b"\x00" in head:
        return f"This file contains binary data, so it is not a CSV. {_HOW_TO_SAVE}"
    text = head.removeprefix(codecs.BOM_UTF8)
    try:
        # A multi-byte character may be cut at the end of the probe: ignore only that.
        codecs.getincrementaldecoder("utf-8")().decode(text, final=len(head) < PROBE_BYTES)
    except UnicodeDecodeError as e:
        line = text[: e.start].count(b"\n") + 1
        return f"Line {line} is not UTF-8 text. {_HOW_TO_SAVE}"
    first = text.split(b"\n", 1)[0].strip(b"\r").decode("utf-8", errors="replace")
    if not first.strip(" ,;\t"):
        return "The first line is empty. A CSV starts with a header row that names the columns."
    return None


def _read_preview(result: Inspection, stream: BinaryIO) -> None:
    stream.seek(0)
    try:
        frame = pd.read_csv(
            stream, nrows=PREVIEW_ROWS, dtype=str, keep_default_na=False, encoding="utf-8-sig", engine="python"
        )
    except (pd.errors.ParserError, csv.Error, UnicodeDecodeError, ValueError) as e:
        result.problem = f"This file could not be read as a CSV: {str(e).strip().splitlines()[0]}"
        return
    result.columns = [str(c) for c in frame.columns]
    result.preview = frame
    if len(result.columns) == 1 and any(sep in result.columns[0] for sep in (";", "\t")):
        result.note = (
            "Only one column was found, and its name contains ';' or tabs. If this file uses semicolons "
            "or tabs between values, save it again as “CSV UTF-8” (comma-separated)."
        )
    elif frame.empty:
        result.note = "The file has a header row but no data rows; the task will produce an empty output."


def as_stream(data: bytes) -> BinaryIO:
    return io.BytesIO(data)
