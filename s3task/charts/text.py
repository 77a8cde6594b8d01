"""A text column's most common values and its different values, counted from the Parquet copy in bounded memory.

A row group of the copy at a time (one per 4 MB block of the output) in batches of about :data:`BATCH_BYTES`: each
batch's different values counted, each kept by its *key* (:func:`keys`: at most ``4 * SHOW_CHARS + 19`` bytes,
whatever the value's length), exactly up to :data:`EXACT_VALUES` different values; beyond, by a Misra–Gries counter
(:class:`TopCounter`) holding at most that many keys, whose candidates a second pass counts again exactly (the
number of different values is then a HyperLogLog estimate, about ±2%). So the memory grows neither with the rows
nor with the values' length or number: at most :data:`EXACT_VALUES` keys and one batch's, plus one batch of the
column. Each pass reads and decodes the next batch on a thread of its own while this one is counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import TYPE_CHECKING

from ..exports.parquet_rows import ahead
from ..handlers.profile import HyperLogLog
from .summary import Bar, ColumnSummary

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

#: Most common values a text column's chart shows.
TOP_VALUES = 10
#: Different values of a text column counted exactly in one pass; beyond, the counter holds at most this many keys
#: (and one batch's), and the most common are counted again exactly in a second pass (:class:`TopCounter`).
EXACT_VALUES = 50_000
#: Bytes of a text column decoded and counted at once (by the row group's size in the copy; a row group at most),
#: and at most :data:`TEXT_BATCH_ROWS` rows.
BATCH_BYTES = 2 << 20
TEXT_BATCH_ROWS = 1 << 16
#: Longer values are shortened in a summary (the chart's label and its words), and counted by their key (:func:`keys`).
SHOW_CHARS = 80


def text_summary(parquet: pq.ParquetFile, index: int, column: str, arrow_type: pa.DataType) -> ColumnSummary:
    """The summary of the text (or true/false) column ``index`` of the copy: its most common values and the rest."""
    counter = TopCounter(EXACT_VALUES)
    with closing(ahead(_distinct(parquet, index, counter))) as batches:
        for found, counts, hashes in batches:
            counter.add(found, counts, hashes)
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

    def add(self, keys: pa.Array, counts: np.ndarray, hashes: np.ndarray | None = None) -> None:
        """Count ``keys`` (different from each other, none empty) seen ``counts`` times each (``hashes``: their
        :func:`_hash64`, if made already)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if not len(keys):
            return
        self.filled += int(counts.sum())
        if not self.exact:
            self.sketch.add(_hash64(keys) if hashes is None else hashes)
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

    long = _long(values)
    if long is None:
        return values
    longs = values.filter(long)
    tails = pa.array([f"…{h:016x}" for h in _hash64(longs).tolist()], pa.large_string())
    cut = pc.utf8_slice_codeunits(longs, 0, SHOW_CHARS - 1)
    made = pc.binary_join_element_wise(cut, tails, pa.scalar("", pa.large_string()))
    return pc.replace_with_mask(values, long, made)


def _long(values: pa.Array) -> pa.Array | None:
    """Which values are longer than :data:`SHOW_CHARS` characters, or None if none is (no value has more
    characters than bytes: a batch of short values in bytes is not looked at value by value)."""
    import pyarrow.compute as pc

    if not len(values) or pc.max(pc.binary_length(values)).as_py() <= SHOW_CHARS:
        return None
    long = pc.greater(pc.utf8_length(values), SHOW_CHARS)
    return long if pc.any(long).as_py() else None


def _hash64(values: pa.Array) -> np.ndarray:
    """A 64-bit hash of each value (pandas' SipHash with its fixed key: the same in every process). Of its UTF-8
    bytes, as pandas hashes a text's (handed over as bytes: no text made of each value to be encoded again, a
    third of the time)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    if not len(values):
        return np.zeros(0, np.uint64)
    raw = values.cast(pa.large_binary() if values.type == pa.large_string() else pa.binary())
    return pd.util.hash_array(raw.to_numpy(zero_copy_only=False).astype(object), categorize=False)


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


def _distinct(
    parquet: pq.ParquetFile, index: int, counter: TopCounter
) -> Iterator[tuple[pa.Array, np.ndarray, np.ndarray | None]]:
    """Each batch's different filled values' keys, how many times each is in the batch, and their hashes when the
    ``counter`` needs them (it has stopped counting exactly; else None)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    for text in _text_chunks(parquet, index):
        found = pc.value_counts(text)
        values, counts = found.field("values"), found.field("counts").to_numpy().astype(np.int64)
        filled = pc.not_equal(values, "").to_numpy(zero_copy_only=False)
        made = keys(values.filter(pa.array(filled)))
        yield made, counts[filled], None if counter.exact else _hash64(made)


def _recount(parquet: pq.ParquetFile, index: int, held: pa.Array) -> np.ndarray:
    """The exact count of each held key, from a second pass over the column."""
    import numpy as np
    import pyarrow.compute as pc

    counts = np.zeros(len(held), np.int64)
    with closing(ahead(_text_chunks(parquet, index))) as chunks:
        for text in chunks:
            if _long(text) is None:  # each cell its own key: looked up as it is (an empty one is never held)
                where = pc.index_in(text, value_set=held).drop_null().to_numpy()
                counts += np.bincount(where, minlength=len(held))
                continue
            found = pc.value_counts(text)  # long values: each different one's key made once
            values, n = found.field("values"), found.field("counts").to_numpy().astype(np.int64)
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


def _shorten(value: str) -> str:
    return value if len(value) <= SHOW_CHARS else value[: SHOW_CHARS - 1] + "…"
