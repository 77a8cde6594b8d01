"""Counting one column of the Parquet copy of a result, a batch of rows at a time, in bounded memory.

Only the asked column is read. A number or date column, :data:`BATCH_ROWS` rows at a time: its smallest and
largest values come from the row groups' statistics (written with the copy), so its histogram takes one pass;
without them, a first pass finds them. A text (or true/false) column's most common values are counted by
:mod:`.text`, in memory that grows neither with the rows nor with the values' length or number.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from ..errors import InvalidInput
from .bins import date_bins, number_bins
from .summary import Bar, ColumnSummary, Kind
from .text import text_summary

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

#: Rows of the column read and counted at once (a few MB of one column, whatever the result's size).
BATCH_ROWS = 1 << 18


def kind_of(arrow_type: pa.DataType) -> Kind:
    """A column's kind from its type in the Parquet copy (:mod:`s3task.exports.parquet` chose it)."""
    import pyarrow.types as t

    if t.is_integer(arrow_type) or t.is_floating(arrow_type):
        return "number"
    if t.is_date(arrow_type) or t.is_timestamp(arrow_type):
        return "date"
    return "text"


def summarise(source: BinaryIO, column: str) -> ColumnSummary:
    """The summary of ``column`` of the Parquet copy read from ``source`` (seekable or not: a stream that
    cannot seek is spooled to a temporary file first, as Parquet is read from its end)."""
    import pyarrow.parquet as pq

    with _seekable(source) as f:
        parquet = pq.ParquetFile(f)
        index = parquet.schema_arrow.get_field_index(column)
        if index < 0:
            raise InvalidInput(f"the result has no column {column!r}")
        arrow_type = parquet.schema_arrow.field(index).type
        kind = kind_of(arrow_type)
        if kind == "text":
            return text_summary(parquet, index, column, arrow_type)
        return _histogram(parquet, index, column, kind, arrow_type)


class _Spooled:
    def __init__(self, source: BinaryIO) -> None:
        self.source = source
        self.file: Any = None

    def __enter__(self) -> BinaryIO:
        try:
            if self.source.seekable():
                return self.source
        except (AttributeError, OSError, ValueError):
            pass
        self.file = tempfile.TemporaryFile(prefix="s3task-chart-")
        shutil.copyfileobj(self.source, self.file, 1 << 20)
        self.file.seek(0)
        return self.file  # type: ignore[no-any-return]

    def __exit__(self, *_: object) -> None:
        if self.file is not None:
            self.file.close()


def _seekable(source: BinaryIO) -> _Spooled:
    return _Spooled(source)


def _chunks(parquet: pq.ParquetFile, index: int) -> Iterator[pa.Array]:
    """The column, :data:`BATCH_ROWS` rows at a time (across the copy's row groups: each step of the counting
    has a cost per call, so a few large batches cost less than many small ones)."""
    import pyarrow as pa

    name = parquet.schema_arrow.field(index).name
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=[name], use_threads=False):
        column = batch.column(0)
        yield column if isinstance(column, pa.Array) else column.combine_chunks()


def _histogram(parquet: pq.ParquetFile, index: int, column: str, kind: Kind, arrow_type: Any) -> ColumnSummary:
    import numpy as np
    import pyarrow.types as t

    rows = parquet.metadata.num_rows
    found = _range(parquet, index)
    if found is None:
        return ColumnSummary(column, kind, str(arrow_type), rows=rows, empty=rows)
    low, high, empty = found
    if kind == "date":
        dates = date_bins(low, high)
        counts, bins_of = np.zeros(dates.count, np.int64), dates.index
        unit = dates.unit if dates.step == 1 else f"{dates.step} years"
        shape: list[tuple[Any, Any, str]] = list(dates.bounds())
        low, high = _iso(low), _iso(high)
    else:
        numbers = number_bins(float(low), float(high), whole=t.is_integer(arrow_type))
        counts, bins_of = np.zeros(numbers.count, np.int64), numbers.index
        edges = numbers.edges()
        shape = [(edges[i], edges[i + 1], "") for i in range(numbers.count)]
        unit = _width(numbers.width)
        low, high = low.item(), high.item()
    for chunk in _chunks(parquet, index):
        values = _values(chunk)
        if len(values):
            counts += np.bincount(bins_of(values), minlength=len(counts))
    bars = tuple(
        Bar(label or _span(start, end), int(n), start, end)
        for (start, end, label), n in zip(shape, counts, strict=True)
    )
    return ColumnSummary(column, kind, str(arrow_type), rows, empty, low, high, unit, bars)


def _values(chunk: pa.Array) -> np.ndarray:
    """The filled values of a row group's column, as numpy (numbers, or ``datetime64``)."""
    import pyarrow.compute as pc

    values: np.ndarray = pc.drop_null(chunk).to_numpy(zero_copy_only=False)
    return values


def _range(parquet: pq.ParquetFile, index: int) -> tuple[Any, Any, int] | None:
    """The smallest and largest filled values (numpy scalars) and the empty cells; None if every cell is empty.
    From the row groups' statistics where each has them, else from a pass over the column."""
    lows, highs, empty = [], [], 0
    for group in range(parquet.num_row_groups):
        meta = parquet.metadata.row_group(group)
        stats = meta.column(index).statistics
        if stats is None or not stats.has_null_count:
            return _range_by_reading(parquet, index)
        empty += stats.null_count
        if stats.null_count == meta.num_rows:
            continue
        if not stats.has_min_max:
            return _range_by_reading(parquet, index)
        lows.append(_scalar(stats.min))
        highs.append(_scalar(stats.max))
    if not lows:
        return None
    return min(lows), max(highs), empty


def _scalar(value: Any) -> Any:
    """A statistic as numpy has it: a number, or a ``datetime64`` for a date or a date-time."""
    import datetime as dt

    import numpy as np

    return (
        np.datetime64(value)
        if isinstance(value, dt.date)
        else np.float64(value)
        if isinstance(value, float)
        else np.int64(value)
    )


def _range_by_reading(parquet: pq.ParquetFile, index: int) -> tuple[Any, Any, int] | None:
    lows, highs, empty = [], [], 0
    for chunk in _chunks(parquet, index):
        empty += chunk.null_count
        values = _values(chunk)
        if len(values):
            lows.append(values.min())
            highs.append(values.max())
    if not lows:
        return None
    return min(lows), max(highs), empty


def _iso(value: Any) -> str:
    return str(value.astype("datetime64[D]")) if hasattr(value, "astype") else str(value)[:10]


def _width(width: float) -> str:
    from .summary import number

    return number(width)


def _span(start: Any, end: Any) -> str:
    from .summary import number

    return f"{number(start)}–{number(end)}"
