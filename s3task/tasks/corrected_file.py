"""A file of corrected rows as staff send it back: the errors workbook (:mod:`s3task.exports.errorbook`) fixed
in Excel and saved as a workbook or a CSV, read into the rows a task of corrections processes.

What is kept: each row's cells under the original's columns (the new task's input: the columns its task
type reads, nothing more, so it reads the file as it read the original) and its ``row in file`` (the row
it stands for in the original's file, kept next to the new task's input for the combined result). The
error column is dropped, and may be deleted by staff before they send the file. Refused, with the row
of the uploaded file that is wrong: other columns than the errors workbook's, a row number that is not
one of the original's rows with errors, or one given twice. A row whose every cell is empty is skipped, in a
CSV as in a workbook: a row cleared in Excel is a line of only delimiters in its CSV, and no row at all in its
workbook (rows staff cannot fix may be deleted or cleared).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput

KINDS = ("xlsx", "csv")
#: A row number as the errors workbook writes it: ASCII digits (not ``²`` or ``٣``, which ``str.isdigit``
#: takes), few enough that ``int`` reads them (a file has far fewer rows than 10**18).
ROW_NUMBER = re.compile(r"[0-9]{1,18}")


@dataclass(frozen=True)
class CorrectedRows:
    """The rows to process again: their original row numbers and their cells (as text), in file order."""

    rows: list[int]
    cells: list[list[str]]

    def input_csv(self, names: list[str]) -> bytes:
        """The new task's input: the original's header and the corrected cells (UTF-8, comma, CRLF)."""
        out = io.StringIO(newline="")
        # The csv module quotes a value holding a character of the line end: with "\n" alone a lone CR went
        # out bare and the reader split the row there. With "\r\n" every value with a CR or LF is quoted.
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(names)
        writer.writerows(self.cells)
        return out.getvalue().encode("utf-8")

    def rows_csv(self, row_column: str) -> bytes:
        """Which original row each input row stands for, one a line under ``row_column``."""
        return (row_column + "\n" + "".join(f"{n}\n" for n in self.rows)).encode("utf-8")


def tables_of(data: bytes) -> tuple[list[str], Iterator[Any]]:
    """The uploaded file's header and its rows, block by block: a workbook (the sheet it opens on, the
    header in row 1, as the errors workbook has it) or a CSV (its format detected, as the New task page
    detects it). Each block is a pair (table, the rows' numbers in the uploaded file)."""
    from ..csvio import CsvReader, detect, detect_kind
    from ..csvio.sheetreader import WorkbookReader

    if detect_kind(data[:8]) == "xlsx":
        book = WorkbookReader(io.BytesIO(data), None, 1)
        return book.names, _numbered(book)
    reader = CsvReader(io.BytesIO(data), input_format=detect(data[: 64 * 1024], whole=len(data) <= 64 * 1024))
    reader.number_rows = True
    return reader.names, _numbered(reader)


def _numbered(reader: Any) -> Iterator[Any]:
    for table, _end in reader.tables():
        # A CSV reader yields the rows before a bad one without their numbers, then raises the bad row's
        # refusal: those rows are left out (``last_rows`` would be None, or the block before's numbers).
        if table.num_rows and reader.last_rows is not None:
            yield table, list(reader.last_rows)
        reader.last_rows = None


def read_corrected(data: bytes, names: list[str], added: tuple[str, str], wanted: set[int]) -> CorrectedRows:
    """The corrected rows of an uploaded file; ``names`` the original's columns, ``added`` the error and
    row columns' names in the errors workbook, ``wanted`` the original's rows with errors."""
    error_name, row_name = added
    header, tables = tables_of(data)
    if header not in ([error_name, row_name, *names], [row_name, *names]):
        raise InvalidInput(
            "the file's columns are not those of the rows with errors: it needs "
            + ", ".join(f"`{n}`" for n in [row_name, *names])
            + f" (and may keep `{error_name}` first); it has "
            + ", ".join(f"`{n}`" for n in header)
        )
    skip = len(header) - len(names)
    rows: list[int] = []
    cells: list[list[str]] = []
    seen: set[int] = set()
    for table, numbers in tables:
        columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
        for at, whole in enumerate(zip(*columns, strict=True)):
            if not any(whole):  # a cleared row (None or "" in every cell)
                continue
            values = whole[skip - 1 :]
            row = _row_number(values[0], numbers[at], row_name)
            if row not in wanted:
                raise InvalidInput(
                    f"row {numbers[at]:,} of the file: {row_name} {row:,} is not one of the rows with errors — "
                    "upload the rows of the errors file, corrected, with their row numbers as they are"
                )
            if row in seen:
                raise InvalidInput(f"row {numbers[at]:,} of the file: {row_name} {row:,} is there twice")
            seen.add(row)
            rows.append(row)
            cells.append(list(values[1:]))
    if not rows:
        raise InvalidInput("the file has no rows under its header: nothing to run again")
    return CorrectedRows(rows, cells)


def _row_number(value: str | None, at: int, row_name: str) -> int:
    value = value or ""
    text = value.strip()
    if text.endswith(".0"):  # a number cell a spreadsheet saved as 5.0
        text = text[:-2]
    if not ROW_NUMBER.fullmatch(text) or int(text) < 2:
        shown = value if len(value) <= 40 else value[:40] + "…"  # a page-long value is not said back whole
        raise InvalidInput(
            f"row {at:,} of the file: {row_name} must be the row number the errors file gave it, not {shown!r}"
        )
    return int(text)
