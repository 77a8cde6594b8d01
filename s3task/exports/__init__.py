"""Copies of a completed output made on first request: the Excel workbook, the exact CSV, the errors-only CSV
and workbook, the Parquet file.

The stored output (``output-attempt-N.csv``) is the one thing a worker writes. It is a CSV
for spreadsheets: UTF-8 with a byte-order mark, and every value a spreadsheet would run as a
formula (or that starts with ``'``) has a leading ``'`` (:mod:`s3task.csvio.writing`). The
protection is reversible, so each copy here is derived from that one file, streamed, block by
block, in constant memory:

``xlsx``
    An Excel workbook: every cell a text cell holding exactly the value (no formula is ever
    written, so no ``'`` is needed). Refused above Excel's limits: 1,048,576 rows (the
    header included), 16,384 columns, and 32,767 characters in a cell (counted as Excel counts
    them, in UTF-16 units: an emoji is two).
``exact``
    The CSV with the values exactly as the task produced them (no ``'`` added), for pandas
    and scripts. Still UTF-8 with a BOM (``pandas.read_csv`` and ``encoding="utf-8-sig"``
    skip it).
``errors``
    Only the rows whose error cell is filled, the error column first, protected like the
    output (it is meant to be opened in a spreadsheet).
``errors-xlsx``
    The same rows as a workbook to correct and send back: the error, each row's number in the file the
    task read, and the input's cells as read (:mod:`.errorbook`: it reads the input again alongside the
    output, so only task types whose output rows are their input rows one for one have it).
``parquet``
    A Parquet file for analysts, the one copy with typed columns: each column is given the
    first type every filled cell of it fits (bool, int64, float64, date32, timestamp, else
    string), chosen over every row of the output (:mod:`.parquet`). It usually reads the output once
    (the first block's types, checked as each later block is written), twice when a later block
    changes a type.

A copy is written next to the output (:meth:`s3task.layout.Layout.export_key`) with a
create-only put, through the store's streaming writer: the object appears only when it is
complete, and a writer that fails or dies leaves none (a local store's staged file is
discarded; an unfinished S3 multipart upload is invisible, and the bucket's lifecycle rule
aborts it). The content depends only on the output (the workbook's timestamps are fixed), so
two app replicas making the same copy at once is harmless: one put wins, the other finds it
made. Downloads then go through the same presigned URL / signed ``/transfer`` route as the
output: the bytes never pass through the app on S3.

:class:`Exports` runs the making in the background so that a page can say "Preparing…" and
poll: at most :data:`MAX_AT_ONCE` copies are made at once in a process (daemon threads; the
others wait their turn, "preparing" too), each copy once. A copy refused for a reason that
cannot change (:class:`~s3task.errors.CannotExport`: above an Excel limit) is remembered, not
tried again.

The parts: :mod:`.variants` (which copies there are, their keys, Excel's limits, whether a copy
can be made), :mod:`.source` (the stored output read back with its protection taken off),
:mod:`.writers` (writing each copy; :mod:`.parquet` the Parquet one, :mod:`.errorbook` the errors
workbook) and :mod:`.runner` (making copies in the background).
"""

from __future__ import annotations

from ..errors import CannotExport, NotReady
from .combined import check_excel, combined_key, make_combined, make_combined_xlsx
from .runner import MAX_AT_ONCE, CopyState, Exports
from .source import exact_frame, peek_bom
from .variants import (
    CONTENT_TYPES,
    DERIVED,
    EXCEL_MAX_CELL,
    EXCEL_MAX_COLUMNS,
    EXCEL_MAX_ROWS,
    LABELS,
    VARIANTS,
    Variant,
    check_possible,
    source_key,
    too_long,
    too_many_columns,
    too_many_rows,
    variant_keys,
)
from .writers import SHEET_NAME, make, write_csv, write_sheet, write_xlsx

__all__ = [
    "CONTENT_TYPES",
    "DERIVED",
    "EXCEL_MAX_CELL",
    "EXCEL_MAX_COLUMNS",
    "EXCEL_MAX_ROWS",
    "LABELS",
    "MAX_AT_ONCE",
    "SHEET_NAME",
    "VARIANTS",
    "CannotExport",
    "CopyState",
    "Exports",
    "NotReady",
    "Variant",
    "check_excel",
    "check_possible",
    "combined_key",
    "exact_frame",
    "make",
    "make_combined",
    "make_combined_xlsx",
    "peek_bom",
    "source_key",
    "too_long",
    "too_many_columns",
    "too_many_rows",
    "variant_keys",
    "write_csv",
    "write_sheet",
    "write_xlsx",
]
