"""Counting one column of the Parquet copy of a result, a batch of rows at a time, in bounded memory.

Only the asked column is read. A number or date column, :data:`BATCH_ROWS` rows at a time: its smallest and
largest values come from the row groups' statistics (written with the copy), so its histogram takes one pass;
without them, a first pass finds them. A text column, a row group of the copy at a time (one per 4 MB block of
the output) in batches of about :data:`BATCH_BYTES`: each batch's different values counted, each kept by its
*key* (:func:`keys`: at most ``4 * SHOW_CHARS + 19`` bytes, whatever the value's length), exactly up to
:data:`EXACT_VALUES` different values; beyond, by a Misra–Gries counter (:class:`TopCounter`) holding at most
that many keys, whose candidates a second pass counts again exactly (the number of different values is then a
HyperLogLog estimate, about ±2%). So the memory grows neither with the rows nor with the values' length or
number: at most :data:`EXACT_VALUES` keys and one batch's, plus one batch of the column.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from ..errors import InvalidInput
from ..handlers.profile import HyperLogLog
from .bins import date_bins, number_bins
from .summary import Bar, ColumnSummary, Kind

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

#: Most common values a text column's chart shows.
TOP_VALUES = 10
#: Different values of a text column counted exactly in one pass; beyond, the counter holds at most this many keys
#: (and one batch's), and the most common are counted again exactly in a second pass (:class:`TopCounter`).
EXACT_VALUES = 50_000
#: Rows of the column read and counted at once (a few MB of one column, whatever the result's size).
BATCH_ROWS = 1 << 18
#: Bytes of a text column decoded and counted at once (by the row group's size in the copy; a row group at most),
#: and at most :data:`TEXT_BATCH_ROWS` rows.
BATCH_BYTES = 2 << 20
TEXT_BATCH_ROWS = 1 << 16
#: Longer values are shortened in a summary (the chart's label and its words), and counted by their key (:func:`keys`).
SHOW_CHARS = 80


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
            return _text(parquet, index, column, arrow_type)
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


def _text(parquet: pq.ParquetFile, index: int, column: str, arrow_type: pa.DataType) -> ColumnSummary:
    counter = TopCounter(EXACT_VALUES)
    for values, counts in _distinct(parquet, index):
        counter.add(keys(values), counts)
    held, counts = counter.keys, counter.counts
    if not counter.exact:  # the held keys counted again, exactly: the counts shown are never estimates
        counts = _recount(parquet, index, held)
    top = [int(i) for i in _ranking(held, counts)[:TOP_VALUES] if counts[i] > 0]
    bars = tuple(Bar(_shorten(held[i].as_py()), int(counts[i])) for i in top)
    # A value never held has at most ``lost`` rows: if that is more than the last bar's, it might have had a bar.
    least = bars[-1].count if len(bars) == TOP_VALUES else 0
    rows = parquet.metadata.num_rows
    return ColumnSummary(
        column,
        "text",
        str(arrow_type),
        rows=rows,
        empty=rows - counter.filled,
        bars=bars,
        others=counter.filled - sum(bar.count for bar in bars),
        distinct=counter.distinct(),
        approximate=not counter.exact,
        unseen_at_most=counter.lost if counter.lost > least else 0,
    )


class TopCounter:
    """Counts of distinct keys: exact while at most ``limit`` different keys are seen, then a Misra–Gries counter:
    holding more than ``limit``, the ``keep + 1``-th largest count is taken off every count, keys left at 0 or
    below dropped (the :data:`TOP_VALUES` largest stay as candidates). Each key is then counted at most
    :attr:`lost` below its true count, so one not held has at most ``lost`` rows; ``lost <= filled / (keep + 1)``."""

    def __init__(self, limit: int) -> None:
        import numpy as np
        import pyarrow as pa

        self.limit = limit
        #: Keys held after a reduction: every key with more than ``filled / (keep + 1)`` rows is among them.
        self.keep = max(1, limit // 2)
        self.keys = pa.array([], pa.large_string())
        self.counts = np.zeros(0, np.int64)
        self.filled = 0
        self.exact = True
        #: Different keys known for sure once counting stops being exact (every one was held then).
        self.at_least = 0
        #: The most any key's count is below its true count (the sum of what each reduction took off every count).
        self.lost = 0
        #: Fed only once counting stops being exact (until then every key is held).
        self.sketch = HyperLogLog()

    def add(self, keys: pa.Array, counts: np.ndarray) -> None:
        """Count ``keys`` (different from each other, none empty) seen ``counts`` times each."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if not len(keys):
            return
        self.filled += int(counts.sum())
        if not self.exact:
            self.sketch.add(_hash64(keys))
        where = pc.fill_null(pc.index_in(keys, value_set=self.keys), -1).to_numpy()
        known = where >= 0
        self.counts[where[known]] += counts[known]  # keys are distinct, so no position repeats
        if not known.all():
            self.keys = pa.concat_arrays([self.keys, keys.filter(pa.array(~known))])
            self.counts = np.concatenate([self.counts, counts[~known]])
        if len(self.counts) > self.limit:
            self._reduce()

    def _reduce(self) -> None:
        import numpy as np
        import pyarrow as pa

        if self.exact:
            self.exact = False
            self.at_least = len(self.counts)
            self.sketch.add(_hash64(self.keys))
        n = len(self.counts)
        cut = int(np.partition(self.counts, n - self.keep - 1)[n - self.keep - 1])  # the (keep + 1)-th largest
        self.lost += cut
        left = self.counts - cut
        stay = left > 0
        top = min(TOP_VALUES, n)
        stay[np.argpartition(-self.counts, top - 1)[:top]] = True  # candidates for the bars, even at zero
        where = np.flatnonzero(stay)
        self.keys = self.keys.take(pa.array(where))
        self.counts = np.maximum(left[where], 0)

    def distinct(self) -> int:
        """The different keys: counted while exact, else the sketch's estimate within what is known for sure (at
        least the keys held when exact counting stopped, at most the filled cells)."""
        if self.exact:
            return len(self.counts)
        return min(self.filled, max(self.sketch.estimate(), self.at_least))


def keys(values: pa.Array) -> pa.Array:
    """The key of each value (filled ``large_string`` values): the value itself up to :data:`SHOW_CHARS`
    characters; a longer one, its first ``SHOW_CHARS - 1`` characters, "…" and 16 hex digits of a 64-bit hash of
    the whole value — longer than :data:`SHOW_CHARS` characters, so never a shorter value's key, and at most
    ``4 * SHOW_CHARS + 19`` bytes whatever the value's length."""
    import pyarrow as pa
    import pyarrow.compute as pc

    long = pc.greater(pc.utf8_length(values), SHOW_CHARS)
    if not pc.any(long).as_py():
        return values
    longs = values.filter(long)
    tails = pa.array([f"…{h:016x}" for h in _hash64(longs).tolist()], pa.large_string())
    cut = pc.utf8_slice_codeunits(longs, 0, SHOW_CHARS - 1)
    made = pc.binary_join_element_wise(cut, tails, pa.scalar("", pa.large_string()))
    return pc.replace_with_mask(values, long, made)


def _hash64(values: pa.Array) -> np.ndarray:
    """A 64-bit hash of each value (pandas' SipHash with its fixed key: the same in every process)."""
    import numpy as np
    import pandas as pd

    if not len(values):
        return np.zeros(0, np.uint64)
    return pd.util.hash_array(values.to_numpy(zero_copy_only=False).astype(object), categorize=False)


def _text_chunks(parquet: pq.ParquetFile, index: int) -> Iterator[pa.Array]:
    """A text column as ``large_string`` (an empty cell ``""``), one row group at a time and in batches of about
    :data:`BATCH_BYTES` (from the row group's size; its rows spread evenly, else the row group at most)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    name = parquet.schema_arrow.field(index).name
    for group in range(parquet.num_row_groups):
        meta = parquet.metadata.row_group(group)
        if not meta.num_rows:
            continue
        size = max(1, meta.column(index).total_uncompressed_size)
        rows = max(1, min(TEXT_BATCH_ROWS, BATCH_BYTES * meta.num_rows // size))
        for batch in parquet.iter_batches(batch_size=rows, row_groups=[group], columns=[name], use_threads=False):
            column = batch.column(0)
            column = column if isinstance(column, pa.Array) else column.combine_chunks()
            yield pc.fill_null(pc.cast(column, pa.large_string()), "")  # a true/false column's empty cell is null


def _distinct(parquet: pq.ParquetFile, index: int) -> Iterator[tuple[pa.Array, np.ndarray]]:
    """Each batch's different filled values and how many times each is in the batch."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    for text in _text_chunks(parquet, index):
        found = pc.value_counts(text)
        values, counts = found.field("values"), found.field("counts").to_numpy().astype(np.int64)
        filled = pc.not_equal(values, "").to_numpy(zero_copy_only=False)
        yield values.filter(pa.array(filled)), counts[filled]


def _recount(parquet: pq.ParquetFile, index: int, held: pa.Array) -> np.ndarray:
    """The exact count of each held key, from a second pass over the column."""
    import numpy as np
    import pyarrow.compute as pc

    counts = np.zeros(len(held), np.int64)
    for values, n in _distinct(parquet, index):
        where = pc.fill_null(pc.index_in(keys(values), value_set=held), -1).to_numpy()
        hit = where >= 0
        counts[where[hit]] += n[hit]  # keys are distinct within a batch, so no position repeats
    return counts


def _ranking(values: pa.Array, counts: np.ndarray) -> np.ndarray:
    """Positions, most common first; ties in key order, so the summary is the same every run."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.table({"value": values, "count": counts})
    return np.asarray(pc.sort_indices(table, sort_keys=[("count", "descending"), ("value", "ascending")]).to_numpy())


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


def _shorten(value: str) -> str:
    return value if len(value) <= SHOW_CHARS else value[: SHOW_CHARS - 1] + "…"
