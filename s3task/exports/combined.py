"""A task's combined result: its output with the rows its completed corrections ran again put in their place,
in the original order, streamed into one CSV like the output (a BOM, formulas protected).

A correction's output row *j* is the output of its input row *j* (its task type's rows are its input's,
one for one; or, for a type that leaves rows out, the input row its row numbers name, :mod:`.rownumbers`:
a corrected row its steps leave out now is left out of the combined result too), and its
``corrected-rows.csv`` (:meth:`s3task.layout.Layout.corrected_rows_key`) says which row of the original's
file that row stands for. The original's own output rows are numbered by
reading its input again alongside them (:mod:`.errorbook`), so each original row whose number a
correction ran again is replaced by that correction's row; with several corrections, a later one's
row wins. The corrections' rows are held in memory (they are the rows with errors: few, next to the
output); the original's output is streamed block by block. Rows not sent back keep the original's
row, error and all.

The copy is kept next to the original's output under a name made of the corrections it combines
(:func:`combined_key`), so a correction completed later makes a new one and none is ever changed.

The Excel workbook of it (:func:`make_combined_xlsx`) is made from that CSV (made first if it is not) by the
Excel copy's rule (:func:`.writers.write_xlsx`: numbers and ISO dates typed, everything else text), kept
beside it under the same digest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import AlreadyExists, CannotExport, NotFound
from ..layout import CSV_TYPE, XLSX_TYPE, Layout
from ..record import TaskRecord, parse_iso
from ..store.base import ObjectMeta, ObjectStore, PutMode
from . import variants
from .errorbook import aligned, numbered_input
from .rownumbers import kept_rows, numbers_rows, picked
from .source import exact_tables, peek_bom
from .variants import source_key

if TYPE_CHECKING:
    import pyarrow as pa


#: A corrected row its correction's task left out (a step list's filter): gone from the combined result too.
LEFT_OUT = -2


def combined_key(layout: Layout, original: TaskRecord, corrections: list[TaskRecord], suffix: str = "csv") -> str:
    """Where the original's output combined with these completed corrections (their attempts) is kept, as
    ``suffix`` (``csv``, or ``xlsx`` for its Excel workbook: the same digest)."""
    made_of = ",".join(f"{c.task_id}:{c.attempt_id}" for c in corrections)
    digest = hashlib.sha256(made_of.encode()).hexdigest()[:16]
    return layout.combined_key(original.task_id, original.attempt_id, digest, suffix)


def check_excel(original: TaskRecord) -> None:
    """Refuse, in the Excel copy's words, a combined result that cannot fit a worksheet. Its rows are the
    original's (a correction's row takes a row's place); only a type that leaves rows out may have fewer, so
    for one of those the workbook's writer counts them as it goes (and refuses the same way)."""
    rows = original.row_count
    if rows is not None and rows + 1 > variants.EXCEL_MAX_ROWS and not numbers_rows(original.task_type):
        raise CannotExport(variants.too_many_rows(rows))


def make_combined_xlsx(
    store: ObjectStore,
    layout: Layout,
    original: TaskRecord,
    corrections: list[TaskRecord],
    target: str,
    *,
    error_column: str | None,
) -> ObjectMeta:
    """Write the combined result as an Excel workbook to ``target`` (create-only), by the Excel copy's rule,
    from the combined CSV (made first if it is not); a workbook made first elsewhere counts."""
    from .writers import write_xlsx

    check_excel(original)
    source = combined_key(layout, original, corrections)
    try:
        meta = store.head(source)
    except NotFound:
        meta = make_combined(store, layout, original, corrections, source, error_column=error_column)
    # Fixed timestamps: the same corrections always give the same bytes.
    created = max((t for r in (original, *corrections) if (t := parse_iso(r.finished_at))), default=None)
    try:
        with store.open_write(target, PutMode.CREATE, content_type=XLSX_TYPE) as sink:
            write_xlsx(lambda: store.open_read(source, if_match=meta.etag), sink, created=created)
    except AlreadyExists:
        pass  # made by someone else meanwhile: the same rows
    return store.head(target)


def make_combined(
    store: ObjectStore,
    layout: Layout,
    original: TaskRecord,
    corrections: list[TaskRecord],
    target: str,
    *,
    error_column: str | None,
) -> ObjectMeta:
    """Write the combined result to ``target`` (create-only), streamed; a copy made first elsewhere counts."""
    from ..csvio.writing import CsvWriter

    names, replaced, rows = _corrected_rows(store, layout, corrections)
    source = source_key(original)
    meta = store.head(source)
    try:
        with (
            store.open_read(source, if_match=meta.etag) as raw,
            store.open_write(target, PutMode.CREATE, content_type=CSV_TYPE) as sink,
        ):
            legacy, stream = peek_bom(raw)
            out_names, outputs = exact_tables(stream, legacy)
            if out_names != names:
                raise CannotExport("the corrections' results have other columns than this task's result")
            writer = CsvWriter(sink, error_column=error_column, protect=True)
            with numbered_input(store, original) as (_input_names, inputs):
                kept = kept_rows(store, original)  # a type that leaves rows out: the input cut to its output's
                for table in _combined(outputs, inputs if kept is None else picked(inputs, kept), replaced, rows):
                    writer.write(table)
            writer.close()
    except AlreadyExists:
        pass  # made by someone else meanwhile: the same rows
    return store.head(target)


def _corrected_rows(
    store: ObjectStore, layout: Layout, corrections: list[TaskRecord]
) -> tuple[list[str], pa.Table, dict[int, int]]:
    """The corrections' output rows (exact values) as one table, and each original row number's row in it."""
    import pyarrow as pa

    names: list[str] | None = None
    tables: list[pa.Table] = []
    where: dict[int, int] = {}
    count = 0
    for correction in corrections:
        numbers = store.get(layout.corrected_rows_key(correction.task_id)).body.decode("utf-8").splitlines()[1:]
        with store.open_read(source_key(correction)) as raw:
            legacy, stream = peek_bom(raw)
            got, blocks = exact_tables(stream, legacy)
            table = pa.concat_tables(list(blocks))
        if names is not None and got != names:
            raise CannotExport("the corrections' results have different columns")
        kept = kept_rows(store, correction)  # a type that leaves rows out: which corrected row each one is
        made_from = range(len(numbers)) if kept is None else [int(r) for block in kept for r in block]
        if table.num_rows != len(made_from) or (made_from and max(made_from) >= len(numbers)):
            raise CannotExport(f"task {correction.task_id}'s result has not one row for each corrected row")
        names = got
        tables.append(table)
        for number in numbers:
            where[int(number)] = LEFT_OUT  # unless its row is in the result (below): the steps left it out
        for j, r in enumerate(made_from):
            where[int(numbers[r])] = count + j  # a later correction's row wins
        count += table.num_rows
    if names is None:
        raise CannotExport("no correction of this task has completed yet")
    return names, pa.concat_tables(tables), where


def _combined(
    outputs: Iterator[pa.Table], inputs: Iterator[Any], replaced: pa.Table, rows: dict[int, int]
) -> Iterator[pa.Table]:
    """The original's output blocks, each row a correction ran again taken from ``replaced`` instead."""
    import numpy as np
    import pyarrow as pa

    for out, _cells, numbers in aligned(outputs, inputs):
        picks = np.fromiter((rows.get(int(n), -1) for n in numbers), np.int64, len(numbers))
        gone = picks == LEFT_OUT
        if gone.any():  # the row was corrected, and the steps leave it out now
            out, picks = out.filter(pa.array(~gone)), picks[~gone]
        hit = picks >= 0
        if not hit.any():
            yield out
            continue
        index = np.where(hit, picks + out.num_rows, np.arange(out.num_rows))
        take = pa.array(index)
        columns = [
            pa.concat_arrays([*out.column(i).chunks, *replaced.column(i).chunks]).take(take)
            for i in range(out.num_columns)
        ]
        yield pa.Table.from_arrays(columns, names=out.column_names)
