"""Which copies of an output there are, where each is kept, and whether one can be made (Excel's limits).

The limits are read from this module when they are checked (``variants.EXCEL_MAX_ROWS``), so they
are defined once and a test can lower them here.
"""

from __future__ import annotations

from typing import Literal

from ..errors import CannotExport, InvalidTransition
from ..layout import CSV_TYPE, PARQUET_TYPE, XLSX_TYPE, Layout
from ..record import TaskRecord

Variant = Literal["csv", "exact", "errors", "xlsx", "parquet", "errors-xlsx"]
#: Every download of a completed task: the output itself, then the copies made from it.
VARIANTS: tuple[Variant, ...] = ("csv", "exact", "errors", "xlsx", "parquet", "errors-xlsx")
DERIVED: tuple[Variant, ...] = ("exact", "errors", "xlsx", "parquet", "errors-xlsx")
CONTENT_TYPES = {
    "csv": CSV_TYPE,
    "exact": CSV_TYPE,
    "errors": CSV_TYPE,
    "errors-xlsx": XLSX_TYPE,
    "xlsx": XLSX_TYPE,
    "parquet": PARQUET_TYPE,
}
#: What each is called where a person chooses.
LABELS = {
    "csv": "CSV",
    "exact": "CSV with exact values",
    "errors": "only the rows with errors (CSV)",
    "errors-xlsx": "only the rows with errors, with their rows in the file (Excel)",
    "xlsx": "Excel workbook (.xlsx)",
    "parquet": "Parquet file with typed columns",
}

#: Rows in an Excel worksheet, the header row included.
EXCEL_MAX_ROWS = 1_048_576
#: Columns in an Excel worksheet.
EXCEL_MAX_COLUMNS = 16_384
#: Characters in an Excel cell, in UTF-16 code units (a character beyond U+FFFF, an emoji, is two).
EXCEL_MAX_CELL = 32_767


def source_key(record: TaskRecord) -> str:
    if not record.output_object_path:
        raise InvalidTransition("the task has no output")
    return record.output_object_path


def variant_keys(layout: Layout, record: TaskRecord) -> dict[Variant, str]:
    """Each variant's key for this completed task."""
    keys: dict[Variant, str] = {"csv": source_key(record)}
    for variant in DERIVED:
        keys[variant] = layout.export_key(record.task_id, record.attempt_id, variant)
    return keys


def check_possible(record: TaskRecord, variant: Variant, error_column: str | None) -> None:
    """Refuse, with the reason, a copy that cannot be made from this task's output."""
    if variant == "xlsx" and record.row_count is not None and record.row_count + 1 > EXCEL_MAX_ROWS:
        raise CannotExport(too_many_rows(record.row_count))
    if variant in ("errors", "errors-xlsx"):
        if error_column is None:
            raise CannotExport("this task type marks no row errors, so there is no errors-only file")
        if not record.error_count:
            raise CannotExport("no row has an error, so there is no errors-only file")
    if variant == "errors-xlsx":
        from .errorbook import MISMATCH, one_for_one
        from .rownumbers import numbers_rows

        if not one_for_one(record.task_type) and not numbers_rows(record.task_type):
            raise CannotExport(MISMATCH + "; download the rows with errors as CSV instead")
        if record.error_count is not None and record.error_count + 1 > EXCEL_MAX_ROWS:
            raise CannotExport(too_many_rows(record.error_count))


def too_many_rows(rows: int) -> str:
    return (
        f"the result has {rows:,} rows and an Excel worksheet holds at most {EXCEL_MAX_ROWS - 1:,} "
        "(plus the header row); download the CSV instead"
    )


def excel_length(value: str) -> int:
    """The length of ``value`` as Excel counts it, in UTF-16 units (an emoji is two)."""
    return len(value.encode("utf-16-le", "surrogatepass")) // 2


def too_long(row: int, value: str) -> str:
    return (
        f"row {row:,} of the result has a value of {excel_length(value):,} characters (as Excel counts them) and "
        f"an Excel cell holds at most {EXCEL_MAX_CELL:,}; download the CSV instead"
    )


def too_many_columns(columns: int) -> str:
    return (
        f"the result has {columns:,} columns and an Excel worksheet holds at most {EXCEL_MAX_COLUMNS:,}; "
        "download the CSV instead"
    )
