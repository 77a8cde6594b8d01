"""The rows with errors as an Excel workbook, to be fixed and sent back: each row's error, its row in the
file the task read, and its cells as they were read (not as the task changed them).

The output has no row numbers, so the workbook is made by reading the input again alongside the output:
a task type whose output rows are its input's rows, one for one and in order (``output_rows == "rows"``
and not ``leaves_out_rows``; the engine keeps the order, :mod:`s3task.processing`), gives output row *k*
for input row *k*; a type that leaves rows out but ``numbers_rows`` has the input cut down to the
output's rows first (:mod:`.rownumbers`). Both are streamed, block by block; a count that does not match is refused, not
guessed. The row numbers are the ones Excel shows for that record of the input: the header's row plus
the records above, blank lines and line breaks inside quotes counted as Excel counts them (a CSV), or
the sheet's own row number (a workbook: rows above the header included, empty rows skipped).

The workbook's columns: the error column (the task type's name for it), :data:`ROW_COLUMN`, then the
input's columns. Should the input have a column of either name, the added one gets ``_`` after it
(:func:`added_names`), and an upload of the corrected rows (:mod:`s3task.tasks.corrections`) takes the
first two columns off by position.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import CannotExport, S3TaskError
from ..record import TaskRecord
from ..store.base import ObjectStore
from .rownumbers import kept_rows, picked
from .source import exact_tables

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

#: The column that says which row of the original file each row is.
ROW_COLUMN = "row in file"
MISMATCH = "the task's output rows are not its input's rows one for one, so their rows in the file are unknown"


def one_for_one(task_type: str) -> bool:
    """Whether the task type's output rows are its input rows, in order (the workbook needs that)."""
    from .. import handlers

    try:
        kind = handlers.get(task_type)
    except S3TaskError:
        return False
    return kind.output_rows == "rows" and not kind.leaves_out_rows


def added_names(error_column: str, names: list[str]) -> tuple[str, str]:
    """The error column's and the row column's names in the workbook, made unlike the input's own."""
    taken = set(names)
    chosen = []
    for name in (error_column, ROW_COLUMN):
        while name in taken:
            name += "_"
        taken.add(name)
        chosen.append(name)
    return chosen[0], chosen[1]


@contextlib.contextmanager
def numbered_input(store: ObjectStore, record: TaskRecord) -> Iterator[tuple[list[str], Iterator[Any]]]:
    """The task's input read again as the worker read it: its header and (table, row numbers) blocks."""
    from ..csvio import CsvReader, spooled
    from ..csvio.sheetreader import WorkbookReader

    read_as = record.read_as
    with store.open_read(record.input_object_path, if_match=record.input_etag) as raw:
        if not read_as.is_workbook:
            reader = CsvReader(raw, input_format=read_as)
            reader.number_rows = True
            yield reader.names, _numbered(reader)
            return
        with spooled(raw, record.input_size_bytes or 0) as copy:
            book = WorkbookReader(copy, read_as.sheet, read_as.header_row)
            try:
                yield book.names, _numbered(book)
            finally:
                book.close()


def _numbered(reader: Any) -> Iterator[tuple[pa.Table, np.ndarray]]:
    import numpy as np

    for table, _end in reader.tables():
        rows = reader.last_rows if table.num_rows else None
        if rows is None or len(rows) != table.num_rows:
            rows = np.zeros(0, np.int64)
            if table.num_rows:
                raise S3TaskError("the input's rows could not be numbered")
        yield table, rows


def write_error_book(
    store: ObjectStore,
    record: TaskRecord,
    output: Any,
    sink: Any,
    *,
    legacy: bool,
    error_column: str,
    write_sheet: Callable[..., int],
    created: datetime | None = None,
    rows_key: str | None = None,
) -> int:
    """Write the workbook of the rows with errors to ``sink`` with ``write_sheet`` (the Excel writer of
    :mod:`.writers`, passed in: it calls this module); returns the rows written.

    ``rows_key``: a task of corrected rows' ``corrected-rows.csv``, which says the row of the original's
    file each of its input rows stands for: its rows are numbered so (the file the staff have), not by
    their row in the input made of them, and its workbook is sent back as the original's would be."""
    _, outputs = exact_tables(output, legacy)
    with numbered_input(store, record) as (names, inputs):
        if rows_key is not None:
            lines = store.get(rows_key).body.decode("utf-8").splitlines()[1:]
            inputs = _renumbered(inputs, [int(n) for n in lines])
        kept = kept_rows(store, record)  # a type that leaves rows out: the input cut to the output's rows
        if kept is not None:
            inputs = picked(inputs, kept)
        error_name, row_name = added_names(error_column, names)
        book_names = [error_name, row_name, *names]
        return write_sheet(book_names, _error_rows(outputs, inputs, error_column), sink, created=created)


def _renumbered(inputs: Iterator[Any], file_rows: list[int]) -> Iterator[tuple[pa.Table, np.ndarray]]:
    """The input's blocks, each row numbered by ``file_rows`` (its row in the original's file) by position."""
    import numpy as np

    at = 0
    for table, _rows in inputs:
        if at + table.num_rows > len(file_rows):
            raise CannotExport("the task has more input rows than its corrected rows' list says")
        yield table, np.asarray(file_rows[at : at + table.num_rows], np.int64)
        at += table.num_rows
    if at != len(file_rows):
        raise CannotExport("the task has fewer input rows than its corrected rows' list says")


def _error_rows(outputs: Iterator[pa.Table], inputs: Iterator[Any], error_column: str) -> Iterator[pa.Table]:
    """Each output block's rows with an error: the error, the row number, the input's cells."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for out, cells, rows in aligned(outputs, inputs):
        if error_column not in out.column_names:
            raise CannotExport("the output has no error column")
        errors = out.column(error_column)
        bad = pc.greater(pc.binary_length(errors), 0)
        numbers = pa.array(rows).cast(pa.string())
        yield pa.Table.from_arrays([errors, numbers, *cells.columns], names=["e", "r", *cells.column_names]).filter(bad)


def aligned(outputs: Iterator[pa.Table], inputs: Iterator[Any]) -> Iterator[tuple[pa.Table, pa.Table, Any]]:
    """The output's blocks, each with the input rows it was made from and their numbers."""
    import numpy as np
    import pyarrow as pa

    current: tuple[pa.Table, np.ndarray] | None = None
    at = 0
    for out in outputs:
        cells: list[pa.Table] = []
        numbers: list[np.ndarray] = []
        need = out.num_rows
        while need:
            if current is None or at == current[0].num_rows:
                current, at = next(inputs, None), 0
                if current is None:
                    raise CannotExport(MISMATCH + " (the output has more rows than the input)")
                continue
            take = min(need, current[0].num_rows - at)
            cells.append(current[0].slice(at, take))
            numbers.append(current[1][at : at + take])
            at, need = at + take, need - take
        if not cells:
            continue
        yield out, pa.concat_tables(cells), np.concatenate(numbers)
    left = 0 if current is None else current[0].num_rows - at
    if left or any(table.num_rows for table, _ in inputs):
        raise CannotExport(MISMATCH + " (the input has more rows than the output)")
