"""Each side of a comparison spooled once to a Parquet file of its own, with its columns' types found on the way.

A side's blocks go, as they come, into a Parquet file in the comparison's scratch folder (Arrow writes it, LZ4,
a row group a block), under neutral names (``c0``, ``c1``, …) beside its row number (``r``): DuckDB tells column
names apart ignoring case, and a result may have both ``Price`` and ``price``. DuckDB then reads the file as
the view ``o`` or ``n``, each query only the columns it needs; loading the blocks into a DuckDB table instead
cost five times the CPU (DuckDB converts and compresses every string as it goes in). The typing rule is the
Parquet copy's (:func:`s3task.exports.parquet.infer_types`), fed the same blocks as they go in.
"""

from __future__ import annotations

import os
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
    """One side as loaded: its DuckDB view (``o`` or ``n``), column names, types and row count."""

    table: str
    label: str  # "the old result" / "the new result", for refusals
    names: list[str]
    kinds: list[str]
    rows: int
    #: The bytes its blocks took in Arrow (text and offsets), for the join's slices (s3task.compare.diff).
    text_bytes: int = 0

    def col(self, name: str) -> str:
        """The stored column of ``name``."""
        return f"c{self.names.index(name)}"

    def has(self, name: str) -> bool:
        return name in self.names


def connect(memory_mb: int, scratch: str | None) -> Any:
    """A DuckDB connection held to ``memory_mb`` MB, spilling into ``scratch`` (the worker's settings). A join's
    build side is the one the query names on its right (DuckDB's choice by estimated size is turned off): the
    comparison's joins hold only a slice of the new result, or keys (s3task.compare.diff)."""
    import duckdb

    config: dict[str, Any] = {
        "memory_limit": f"{max(64, memory_mb)}MB",
        **SETTINGS,
        "disabled_optimizers": "build_side_probe_side",
    }
    if scratch:
        config["temp_directory"] = scratch
    return duckdb.connect(":memory:", config=config)


def load(con: Any, table: str, label: str, tables: Iterable[pa.Table], folder: str, keys: Iterable[str] = ()) -> Side:
    """Every block of ``tables`` into ``folder``/``table``.parquet, its row numbers added, read by DuckDB as the
    view ``table``; the types on the way. The columns ``keys`` get statistics (see :func:`_writer`)."""
    import pyarrow as pa

    stream = iter(tables)
    first = next(stream, None)
    names = list(first.column_names) if first is not None else []
    _distinct(names, label)
    path = os.path.join(folder, f"{table}.parquet")
    pool, count, size = pa.default_memory_pool(), 0, 0

    def feed(writer: Any) -> Iterator[pa.Table]:
        nonlocal count, size
        for block in _chain(first, stream):
            if block.column_names != names:
                raise InvalidInput(f"{label} changes its columns part way through")
            writer.write_table(_numbered(block, count, writer.schema))
            count, size = count + block.num_rows, size + block.nbytes
            yield block
            pool.release_unused()  # what the block's parsing and typing took goes back to the system

    with _writer(path, len(names), [f"c{names.index(k)}" for k in keys if k in names]) as writer:
        kinds = infer_types(feed(writer), names)
    con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({_literal(path)})")
    return Side(table, label, names, kinds, count, size)


def _writer(path: str, width: int, keyed: list[str]) -> Any:
    """The spool's Parquet writer: ``width`` text columns and the row number; LZ4, no dictionaries (the fastest
    to write of Arrow's choices, a third of the text's size), and statistics (each row group's least and greatest
    value) only for the row number, which a slice of the join is read by, and the key columns ``keyed``, by which
    DuckDB skips the row groups of the old result whose keys a slice of the new one cannot meet (results in a
    similar order of keys: the benchmark's 1 GB took a quarter less CPU); other columns' statistics cost
    a tenth of the loading's time and serve no query."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..csvio.common import TEXT

    schema = pa.schema([*((f"c{i}", TEXT) for i in range(width)), ("r", pa.int64())])
    return pq.ParquetWriter(path, schema, compression="lz4", use_dictionary=False, write_statistics=[*keyed, "r"])


def _numbered(block: pa.Table, first: int, schema: pa.Schema) -> pa.Table:
    """``block`` under the spool's schema, its rows numbered from ``first``."""
    import numpy as np
    import pyarrow as pa

    rows = pa.array(np.arange(first, first + block.num_rows, dtype=np.int64))
    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(block.columns, schema, strict=False)]
    return pa.table([*columns, rows], schema=schema)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


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
