"""``profile``: a summary of every column of the whole file."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import TaskType, register

if TYPE_CHECKING:  # used in annotations; imported where used, so listing task types needs no pandas
    import numpy as np
    import pandas as pd
    import pyarrow as pa

TOP = 5
#: Different values counted exactly, shared by all columns (per column at least MIN_EXACT).
EXACT_BUDGET = 200_000
MIN_EXACT = 1_000
#: Values longer than this are shortened in the most-common cells.
SHOW_CHARS = 80


@register
class Profile(TaskType):
    name = "profile"
    title = "Profile the columns"
    description = (
        "Summarises the whole file with one output row per input column: how many cells are filled and how "
        "many are empty, how many different values there are, the length of the shortest and the longest "
        "value (in characters), and the five most common values, each in a value column and a count column "
        "(top_1_value, top_1_count, …). Different values are counted exactly up to a limit (20,000 per column "
        "for a 10-column file); beyond it the count is an estimate within about 2% (never more than the filled "
        "cells), distinct_is_estimate says true and the note says the most common values are approximate."
    )
    error_column = None
    output_rows = "summary"

    def __init__(self, params: Mapping[str, Any]) -> None:
        super().__init__(self.validate(params))
        self._stats: list[ColumnStats] | None = None
        self._names: list[str] = []

    def process(self, chunk: pd.DataFrame) -> None:
        if self._stats is None:
            self._names = [str(c) for c in chunk.columns]
            cap = max(MIN_EXACT, EXACT_BUDGET // max(1, len(self._names)))
            self._stats = [ColumnStats(cap) for _ in self._names]
        for i, stats in enumerate(self._stats):
            stats.update(chunk.iloc[:, i])
        return None

    def finish(self) -> pd.DataFrame:
        import pandas as pd

        stats = self._stats or []
        rows = [column.summary(name, i) for i, (name, column) in enumerate(zip(self._names, stats, strict=True), 1)]
        return pd.DataFrame(rows, columns=COLUMNS, dtype="str")


COLUMNS = [
    "column",
    "position",
    "filled",
    "empty",
    "distinct",
    "distinct_is_estimate",
    "shortest",
    "longest",
    *(f"top_{i}_{part}" for i in range(1, TOP + 1) for part in ("value", "count")),
    "note",
]


class ColumnStats:
    """Running statistics of one column in bounded memory, counted with Arrow and numpy."""

    def __init__(self, cap: int) -> None:
        import numpy as np
        import pyarrow as pa

        self.cap = cap
        self.rows = 0
        self.filled = 0
        self.shortest: int | None = None
        self.longest: int | None = None
        #: Distinct filled values and how often each was seen: all of them while exact, the heaviest
        #: ``cap`` after (their counts then lower bounds).
        self.values = pa.array([], pa.large_string())
        self.counts = np.zeros(0, dtype=np.int64)
        self.exact = True
        #: Distinct values known for sure once the count is an estimate (all were held when it stopped).
        self.at_least = 0
        #: Fed only once the counts stop being exact (until then they hold every value).
        self.sketch = HyperLogLog()

    def update(self, values: pd.Series) -> None:
        self.update_text(_text(values))

    def update_text(self, column: pa.ChunkedArray) -> None:
        """:meth:`update` with a column already in Arrow: ``large_string``, an empty cell ``""`` (no nulls)."""
        import numpy as np
        import pyarrow.compute as pc

        self.rows += len(column)
        filled = column.filter(pc.not_equal(column, ""))
        if not len(filled):
            return
        self.filled += len(filled)
        lengths = pc.min_max(pc.utf8_length(filled)).as_py()
        self.shortest = min(lengths["min"], self.shortest if self.shortest is not None else lengths["min"])
        self.longest = max(lengths["max"], self.longest or 0)
        found = pc.value_counts(filled)
        self._merge(found.field("values"), found.field("counts").to_numpy().astype(np.int64))

    def _merge(self, values: pa.Array, counts: np.ndarray) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if not self.exact:
            self.sketch.add(_hashes(values))
        where = pc.fill_null(pc.index_in(values, value_set=self.values), -1).to_numpy()
        known = where >= 0
        self.counts[where[known]] += counts[known]  # values are distinct, so no position repeats
        self.values = pa.concat_arrays([self.values, values.filter(pa.array(~known))])
        self.counts = np.concatenate([self.counts, counts[~known]])
        if len(self.counts) > 2 * self.cap:
            if self.exact:
                self.sketch.add(_hashes(self.values))
                self.exact = False
                self.at_least = len(self.counts)
            keep = _ranking(self.values, self.counts)[: self.cap]
            self.values, self.counts = self.values.take(pa.array(keep)), self.counts[keep]

    def summary(self, name: str, position: int) -> list[str]:
        distinct = len(self.counts) if self.exact else self.distinct_estimate()
        top = _ranking(self.values, self.counts)[:TOP]
        cells = [cell for i in top for cell in (_shorten(self.values[i].as_py()), str(int(self.counts[i])))]
        note = ""
        if not self.exact:
            note = (
                f"more than {self.cap:,} different values: 'distinct' is an estimate (about ±2%) "
                "and the most common values and their counts are approximate"
            )
        return [
            name,
            str(position),
            str(self.filled),
            str(self.rows - self.filled),
            str(distinct),
            "false" if self.exact else "true",
            "" if self.shortest is None else str(self.shortest),
            "" if self.longest is None else str(self.longest),
            *cells,
            *[""] * (2 * TOP - len(cells)),
            note,
        ]

    def most_common(self, n: int) -> list[tuple[str, int]]:
        """The ``n`` most common values and their counts (ties in value order; lower bounds once not exact)."""
        return [(self.values[i].as_py(), int(self.counts[i])) for i in _ranking(self.values, self.counts)[:n]]

    def distinct(self) -> int:
        """The different filled values: counted while exact, else estimated (:meth:`distinct_estimate`)."""
        return len(self.counts) if self.exact else self.distinct_estimate()

    def distinct_estimate(self) -> int:
        """The sketch's estimate, within what is known for sure: at least the values seen before the
        exact count stopped, at most the filled cells (an estimate may overshoot, a count cannot)."""
        return min(self.filled, max(self.sketch.estimate(), self.at_least))


def _ranking(values: pa.Array, counts: np.ndarray) -> np.ndarray:
    """Positions, most common first; ties in value order, so the output is the same every run."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.table({"value": values, "count": counts})
    return np.asarray(pc.sort_indices(table, sort_keys=[("count", "descending"), ("value", "ascending")]).to_numpy())


def _text(values: pd.Series) -> pa.ChunkedArray:
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(values, from_pandas=True)
    arr = arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])
    return pc.fill_null(arr.cast(pa.large_string()), "")


def _hashes(values: pa.Array) -> np.ndarray:
    import pandas as pd

    return pd.util.hash_array(values.to_numpy(zero_copy_only=False).astype(object), categorize=False)


def _shorten(value: str) -> str:
    return value if len(value) <= SHOW_CHARS else value[: SHOW_CHARS - 1] + "…"


class HyperLogLog:
    """Distinct-count estimate from 64-bit hashes: 2**14 one-byte registers, standard error about 0.8%."""

    P = 14
    M = 1 << P

    def __init__(self) -> None:
        import numpy as np

        self.registers = np.zeros(self.M, dtype=np.uint8)

    def add(self, hashes: np.ndarray) -> None:
        import numpy as np

        if not len(hashes):
            return
        hashes = hashes.astype(np.uint64, copy=False)
        index = (hashes >> np.uint64(64 - self.P)).astype(np.intp)
        rest = (hashes << np.uint64(self.P)) | np.uint64(1 << (self.P - 1))
        # Rank = leading zeros + 1, from the bit length (frexp's exponent) of the remaining bits.
        bit_length = np.frexp(rest.astype(np.float64))[1]
        rank = (65 - bit_length).astype(np.uint8)
        np.maximum.at(self.registers, index, rank)

    def estimate(self) -> int:
        import numpy as np

        m = self.M
        alpha = 0.7213 / (1 + 1.079 / m)
        raw = alpha * m * m / float(np.sum(np.ldexp(1.0, -self.registers.astype(np.int32))))
        zeros = int(np.count_nonzero(self.registers == 0))
        if raw <= 2.5 * m and zeros:
            raw = m * math.log(m / zeros)
        return round(raw)
