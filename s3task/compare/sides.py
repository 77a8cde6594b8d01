"""Each side of a comparison loaded into DuckDB once, with its columns' types found on the way.

A side's columns are stored under neutral names (``c0``, ``c1``, …) beside its row number (``r``): DuckDB
tells column names apart ignoring case, and a result may have both ``Price`` and ``price``. The typing rule
is the Parquet copy's (:func:`s3task.exports.parquet.infer_types`), fed the same blocks as they go in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..exports.parquet import infer_types
from ..steps.wholefile import SETTINGS

if TYPE_CHECKING:
    import pyarrow as pa

#: The types of the Parquet copy's rule that make a column a number.
NUMERIC = ("int64", "float64")


@dataclass
class Side:
    """One side as loaded: its DuckDB table (``o`` or ``n``), column names, types and row count."""

    table: str
    label: str  # "the old result" / "the new result", for refusals
    names: list[str]
    kinds: list[str]
    rows: int

    def col(self, name: str) -> str:
        """The stored column of ``name``."""
        return f"c{self.names.index(name)}"

    def has(self, name: str) -> bool:
        return name in self.names


def connect(memory_mb: int, scratch: str | None) -> Any:
    """A DuckDB connection held to ``memory_mb`` MB, spilling into ``scratch`` (the worker's settings)."""
    import duckdb

    config: dict[str, Any] = {"memory_limit": f"{max(64, memory_mb)}MB", **SETTINGS}
    if scratch:
        config["temp_directory"] = scratch
    return duckdb.connect(":memory:", config=config)


def load(con: Any, table: str, label: str, tables: Iterable[pa.Table]) -> Side:
    """Every block of ``tables`` into the DuckDB table ``table``, its row numbers added; the types on the way."""
    import numpy as np
    import pyarrow as pa

    stream = iter(tables)
    first = next(stream, None)
    names = list(first.column_names) if first is not None else []
    _distinct(names, label)
    con.execute(f"CREATE TABLE {table} ({', '.join([f'c{i} VARCHAR' for i in range(len(names))] + ['r BIGINT'])})")
    count = 0

    def feed() -> Iterator[pa.Table]:
        nonlocal count
        for block in _chain(first, stream):
            if block.column_names != names:
                raise InvalidInput(f"{label} changes its columns part way through")
            stored = pa.table(
                [*block.columns, pa.array(np.arange(count, count + block.num_rows, dtype=np.int64))],
                names=[*(f"c{i}" for i in range(len(names))), "r"],
            )
            con.register("incoming", stored)
            con.execute(f"INSERT INTO {table} SELECT * FROM incoming")
            con.unregister("incoming")
            count += block.num_rows
            yield block

    kinds = infer_types(feed(), names)
    return Side(table, label, names, kinds, count)


def _chain(first: pa.Table | None, rest: Iterator[pa.Table]) -> Iterator[pa.Table]:
    if first is not None:
        yield first
    yield from rest


def _distinct(names: list[str], label: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidInput(f"{label} has two columns named {name!r}: rename one of them to compare it")
        seen.add(name)


def numeric_both(old: Side, new: Side, name: str) -> bool:
    """Whether the column ``name`` is a number on both sides by the Parquet copy's rule."""
    return old.kinds[old.names.index(name)] in NUMERIC and new.kinds[new.names.index(name)] in NUMERIC
