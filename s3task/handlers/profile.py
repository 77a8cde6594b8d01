"""``profile``: a summary of every column of the whole file."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from . import TaskType, register

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
        "value (in characters), and the five most common values with how often each appears. Different values "
        "are counted exactly up to a limit (20,000 per column for a 10-column file); beyond it the count is an "
        "estimate within about 2% and the most common values are approximate, which the note column says."
    )
    error_column = None

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
        stats = self._stats or []
        rows = [column.summary(name, i) for i, (name, column) in enumerate(zip(self._names, stats, strict=True), 1)]
        return pd.DataFrame(rows, columns=COLUMNS, dtype="str")


COLUMNS = [
    "column",
    "position",
    "filled",
    "empty",
    "distinct",
    "shortest",
    "longest",
    *(f"top_{i}" for i in range(1, TOP + 1)),
    "note",
]


class ColumnStats:
    """Running statistics of one column in bounded memory."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.rows = 0
        self.filled = 0
        self.shortest: int | None = None
        self.longest: int | None = None
        self.counts = pd.Series([], dtype="int64", index=pd.Index([], dtype="str"))
        self.exact = True
        self.sketch = HyperLogLog()

    def update(self, values: pd.Series) -> None:
        self.rows += len(values)
        filled = values[values != ""]
        if not len(filled):
            return
        self.filled += len(filled)
        lengths = filled.str.len()
        low, high = int(lengths.min()), int(lengths.max())
        self.shortest = low if self.shortest is None else min(self.shortest, low)
        self.longest = high if self.longest is None else max(self.longest, high)
        chunk_counts = filled.value_counts()
        self.sketch.add(pd.util.hash_array(chunk_counts.index.to_numpy(dtype=object), categorize=False))
        self.counts = pd.concat([self.counts, chunk_counts]).groupby(level=0, sort=False).sum()
        if len(self.counts) > 2 * self.cap:
            # Keep the heaviest values only: from here on counts are lower bounds and distinct is estimated.
            self.counts = _ranked(self.counts).head(self.cap)
            self.exact = False

    def summary(self, name: str, position: int) -> list[str]:
        distinct = len(self.counts) if self.exact else self.sketch.estimate()
        top = _ranked(self.counts).head(TOP)
        cells = [f"{_shorten(value)} ({count:,})" for value, count in top.items()]
        note = ""
        if not self.exact:
            note = (
                f"more than {self.cap:,} different values: 'distinct' is an estimate (about ±2%) "
                "and the most common values are approximate"
            )
        return [
            name,
            str(position),
            str(self.filled),
            str(self.rows - self.filled),
            str(distinct),
            "" if self.shortest is None else str(self.shortest),
            "" if self.longest is None else str(self.longest),
            *cells,
            *[""] * (TOP - len(cells)),
            note,
        ]


def _ranked(counts: pd.Series) -> pd.Series:
    """Most common first; ties in value order, so the output is the same every run."""
    frame = pd.DataFrame({"value": counts.index.astype("str"), "count": counts.to_numpy()})
    frame = frame.sort_values(["count", "value"], ascending=[False, True], kind="stable")
    return pd.Series(frame["count"].to_numpy(), index=pd.Index(frame["value"].to_numpy(), dtype="str"))


def _shorten(value: str) -> str:
    return value if len(value) <= SHOW_CHARS else value[: SHOW_CHARS - 1] + "…"


class HyperLogLog:
    """Distinct-count estimate from 64-bit hashes: 2**14 one-byte registers, standard error about 0.8%."""

    P = 14
    M = 1 << P

    def __init__(self) -> None:
        self.registers = np.zeros(self.M, dtype=np.uint8)

    def add(self, hashes: np.ndarray) -> None:
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
        m = self.M
        alpha = 0.7213 / (1 + 1.079 / m)
        raw = alpha * m * m / float(np.sum(np.ldexp(1.0, -self.registers.astype(np.int32))))
        zeros = int(np.count_nonzero(self.registers == 0))
        if raw <= 2.5 * m and zeros:
            raw = m * math.log(m / zeros)
        return round(raw)
