"""Writing each copy of an output: the exact or errors-only CSV, the Excel workbook, streamed to the store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..errors import AlreadyExists, CannotExport
from ..record import TaskRecord, parse_iso
from ..store.base import ObjectMeta, ObjectStore, PutMode
from . import variants
from .parquet import write_parquet
from .source import exact_tables, peek_bom
from .variants import CONTENT_TYPES, DERIVED, Variant, check_possible, source_key
from .write_only import WriteOnly

SHEET_NAME = "Result"
#: Rows turned into Python strings at a time for the workbook (a block holds tens of thousands).
_PY_ROWS = 2048


def make(
    store: ObjectStore,
    record: TaskRecord,
    variant: Variant,
    target: str,
    *,
    error_column: str | None,
    rows_key: str | None = None,
) -> ObjectMeta:
    """Write the ``variant`` copy of the record's output to ``target`` (create-only), streamed.

    Returns the copy's metadata; a copy that another process made first counts as made. ``rows_key``:
    a task of corrected rows' list of the original rows they stand for (its errors workbook's numbers).
    """
    if variant not in DERIVED:
        raise ValueError(f"{variant!r} is not a copy made from the output")
    check_possible(record, variant, error_column)
    source = source_key(record)
    meta = store.head(source)
    try:
        with (
            store.open_read(source, if_match=meta.etag) as raw,
            store.open_write(target, PutMode.CREATE, content_type=CONTENT_TYPES[variant]) as sink,
        ):
            legacy, stream = peek_bom(raw)
            if variant == "parquet":  # usually one pass over the output, sometimes two, each a read of its own
                write_parquet(lambda: store.open_read(source, if_match=meta.etag), WriteOnly(sink))
            elif variant == "errors-xlsx":
                from .errorbook import write_error_book

                assert error_column is not None  # check_possible refuses a copy of errors without one
                when = parse_iso(record.finished_at)
                write_error_book(
                    store, record, stream, sink, legacy=legacy, error_column=error_column, write_sheet=write_sheet,
                    created=when, rows_key=rows_key,
                )  # fmt: skip
            elif variant == "xlsx" and record.task_type == "compare":  # the changes coloured, as daff does
                from .highlighted import write_highlighted

                opened = lambda: store.open_read(source, if_match=meta.etag)  # noqa: E731
                write_highlighted(opened, sink, created=parse_iso(record.finished_at))
            elif variant == "xlsx":  # two passes too: which columns are numbers and dates, then the rows
                write_xlsx(
                    lambda: store.open_read(source, if_match=meta.etag), sink, created=parse_iso(record.finished_at)
                )
            else:
                write_csv(stream, sink, legacy=legacy, errors_only=variant == "errors", error_column=error_column)
    except AlreadyExists:
        pass  # made by someone else meanwhile: same bytes
    return store.head(target)


def write_csv(stream: Any, sink: Any, *, legacy: bool, errors_only: bool, error_column: str | None) -> int:
    """The exact CSV (or, ``errors_only``, the protected errors-only CSV); returns the data rows written."""
    import pyarrow.compute as pc

    from ..csvio.writing import CsvWriter

    names, tables = exact_tables(stream, legacy)
    if errors_only:
        if error_column is None or error_column not in names:
            raise CannotExport("the output has no error column")
        order = [error_column, *(n for n in names if n != error_column)]
    writer = CsvWriter(sink, error_column=error_column, protect=errors_only)
    rows = 0
    for table in tables:
        if errors_only:
            table = table.filter(pc.greater(pc.binary_length(table.column(error_column)), 0)).select(order)
        rows += writer.write(table).rows
    writer.close()
    return rows


def write_xlsx(open_source: Any, sink: Any, *, created: datetime | None = None) -> int:
    """The output that ``open_source()`` opens (called twice: each pass a read of its own) as one worksheet,
    streamed (xlsxwriter's constant-memory mode): a first pass decides which columns are numbers and dates
    (:mod:`.excel_types`), the second writes the rows as they are read; xlsxwriter keeps one row in memory
    and the sheet's XML in a temporary file, which it then zips into ``sink``. Returns the data rows written."""
    from .excel_types import excel_kinds

    with open_source() as raw:
        legacy, stream = peek_bom(raw)
        names, tables = exact_tables(stream, legacy)
        kinds = excel_kinds(tables, names)
    with open_source() as raw:
        legacy, stream = peek_bom(raw)
        names, tables = exact_tables(stream, legacy)
        return write_sheet(names, tables, sink, created=created, kinds=kinds)


def write_sheet(
    names: list[str], tables: Any, sink: Any, *, created: datetime | None = None, kinds: list[str] | None = None
) -> int:
    """Rows given as Arrow tables of text, under ``names``, as one worksheet (see write_xlsx): text cells, or
    each column as ``kinds`` says (:mod:`.excel_types`: numbers and dates where every value is one)."""
    import xlsxwriter  # type: ignore[import-untyped]  # the app and the CLI need it; a worker never does

    from .excel_types import TEXT, values_of

    if len(names) > variants.EXCEL_MAX_COLUMNS:
        raise CannotExport(variants.too_many_columns(len(names)))
    book = xlsxwriter.Workbook(
        WriteOnly(sink),
        {
            "constant_memory": True,
            "strings_to_numbers": False,
            "strings_to_formulas": False,
            "strings_to_urls": False,
        },
    )
    # Fixed timestamps: the same output always gives the same bytes.
    book.set_properties({"created": created or datetime(2000, 1, 1, tzinfo=UTC)})
    sheet = book.add_worksheet(SHEET_NAME)
    kinds = kinds or [TEXT] * len(names)
    writes = [_writer(book, sheet, kind) for kind in kinds]
    _write_row([sheet.write_string] * len(names), 0, names)
    row = 0
    for table in tables:
        if row + table.num_rows + 1 > variants.EXCEL_MAX_ROWS:
            raise CannotExport(variants.too_many_rows(row + table.num_rows))
        for batch in table.to_batches(max_chunksize=_PY_ROWS):  # Python values for a few rows at a time
            columns = [values_of(col, kind) for col, kind in zip(batch.columns, kinds, strict=True)]
            for values in zip(*columns, strict=True):
                row += 1
                _write_row(writes, row, values)
    sheet.freeze_panes(1, 0)
    book.close()
    return row


def _writer(book: Any, sheet: Any, kind: str) -> Any:
    """How a column of ``kind`` is written: a text cell, a number, or a date shown as ISO 8601."""
    from .excel_types import DATE, DATETIME, NUMBER

    if kind == NUMBER:
        return sheet.write_number
    if kind in (DATE, DATETIME):
        shown = book.add_format({"num_format": "yyyy-mm-dd" if kind == DATE else "yyyy-mm-dd hh:mm:ss"})
        return lambda row, col, value: sheet.write_datetime(row, col, value, shown)
    return sheet.write_string


def _write_row(writes: list[Any], row: int, values: Any) -> None:
    limit = variants.EXCEL_MAX_CELL
    for col, value in enumerate(values):
        if value is None or value == "":
            continue
        if isinstance(value, str) and len(value) > limit // 2 and variants.excel_length(value) > limit:
            # Excel counts UTF-16 units (an emoji is two); only a value past half the limit can exceed it.
            raise CannotExport(variants.too_long(row, value))
        if writes[col](row, col, value) != 0:  # xlsxwriter cuts what it finds too long and says so (-2)
            raise CannotExport(variants.too_long(row, str(value)))
