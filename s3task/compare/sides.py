"""Each side of a comparison spooled once to a Parquet file of its own, with its columns' types found on the way.

A side's blocks go, as they come, into a Parquet file in the comparison's scratch folder (Arrow writes it, LZ4,
a row group a block), under neutral names (``c0``, ``c1``, …) beside its row number (``r``) and, when keys are
given, each row's hash (``h``: DuckDB's 64-bit ``hash()`` of the cells of every column but the keys, in the
order of their names), by which the join tells the rows that may have changed from the ones that have not
(:mod:`.diff`). DuckDB tells column names apart ignoring case, and a result may have both ``Price`` and
``price``. DuckDB then reads the file as the view ``o`` or ``n``, each query only the columns it needs; loading
the blocks into a DuckDB table instead cost five times the CPU (DuckDB converts and compresses every string as
it goes in). The typing rule is the Parquet copy's (:func:`s3task.exports.parquet.infer_types`), fed the same
blocks as they go in; the hashing and writing run on a thread of their own meanwhile (:class:`_Spooler`), a
block or two behind, so that a second core reads and types the next blocks.
"""

from __future__ import annotations

import os
import queue
import threading
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

#: DuckDB's threads for a comparison: two where the machine has two cores (the joins took two fifths less time
#: at 1 GB a side, in the same memory).
THREADS = max(1, min(2, os.cpu_count() or 1))


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
    #: The bytes of its key columns' cells among them.
    key_bytes: int = 0
    #: The columns whose cells the stored hash ``h`` is of, in that order (every column but the keys, by name);
    #: None when no keys were given (no hash stored).
    hashed: list[str] | None = None

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
        "threads": str(THREADS),
        "disabled_optimizers": "build_side_probe_side",
    }
    if scratch:
        config["temp_directory"] = scratch
    return duckdb.connect(":memory:", config=config)


def load(con: Any, table: str, label: str, tables: Iterable[pa.Table], folder: str, keys: Iterable[str] = ()) -> Side:
    """Every block of ``tables`` into ``folder``/``table``.parquet, its row numbers (and, with ``keys``, its rows'
    hashes) added, read by DuckDB as the view ``table``; the types on the way. The columns ``keys`` get
    statistics (see :func:`_writer`)."""
    import pyarrow as pa

    stream = iter(tables)
    first = next(stream, None)
    names = list(first.column_names) if first is not None else []
    _distinct(names, label)
    keyed = [k for k in keys if k in names]
    hashed = sorted(n for n in names if n not in keyed) if keyed else None
    path = os.path.join(folder, f"{table}.parquet")
    pool, count, size, key_size = pa.default_memory_pool(), 0, 0, 0
    places = None if hashed is None else [names.index(n) for n in hashed]
    spooler = _Spooler(con, path, len(names), [names.index(k) for k in keyed], places)

    def feed() -> Iterator[pa.Table]:
        nonlocal count, size, key_size
        for block in _chain(first, stream):
            if block.column_names != names:
                raise InvalidInput(f"{label} changes its columns part way through")
            spooler.put(block, count)
            count, size = count + block.num_rows, size + block.nbytes
            key_size += sum(block.column(k).nbytes for k in keyed)
            yield block
            pool.release_unused()  # what the block's parsing and typing took goes back to the system

    with spooler:
        kinds = infer_types(feed(), names)
    con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({literal(path)})")
    return Side(table, label, names, kinds, count, size, key_size, hashed)


class _Spooler:
    """The spool's writer on a thread of its own: each block :meth:`put` is numbered, hashed (DuckDB's ``hash()``
    of the columns ``hashed``, by their places, when given) and written to ``path``, at most two blocks waiting.
    On leaving, the blocks put are all written, or the first error of the thread is raised."""

    def __init__(self, con: Any, path: str, width: int, keyed: list[int], hashed: list[int] | None) -> None:
        self._writer = _writer(path, width, [f"c{i}" for i in keyed], hashed is not None)
        columns = [f"c{i}" for i in hashed] if hashed is not None else None
        self._hash = (f"hash({', '.join(columns)})" if columns else "0::UBIGINT") if columns is not None else None
        self._cursor = con.cursor() if self._hash else None
        self._queue: queue.Queue[tuple[pa.Table, int] | None] = queue.Queue(maxsize=2)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="compare-spool", daemon=True)
        self._thread.start()

    def put(self, block: pa.Table, first: int) -> None:
        if self._error is None:
            self._queue.put((block, first))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._error is not None:
                continue  # the rest only taken off, so that put() never waits on a thread that stopped
            try:
                schema = self._writer.schema
                numbered = _numbered(item[0], item[1], schema)
                if self._cursor is not None:
                    rows = self._cursor.from_arrow(numbered).project(f"{self._hash} AS h").to_arrow_table()
                    numbered = numbered.append_column(schema.field("h"), rows.column(0).combine_chunks())
                self._writer.write_table(numbered)
            except BaseException as e:  # raised again in the caller's thread on leaving
                self._error = e

    def __enter__(self) -> _Spooler:
        return self

    def __exit__(self, *exc: object) -> None:
        self._queue.put(None)
        self._thread.join()
        self._writer.close()
        if self._cursor is not None:
            self._cursor.close()
        if self._error is not None and exc[0] is None:
            raise self._error


def _writer(path: str, width: int, keyed: list[str], hashed: bool = False) -> Any:
    """The spool's Parquet writer: ``width`` text columns, the row number and (``hashed``) the row's hash; LZ4,
    no dictionaries (the fastest to write of Arrow's choices, a third of the text's size), and statistics (each
    row group's least and greatest value) only for the row number, which a slice of the join is read by, and
    the key columns ``keyed``, by which DuckDB skips the row groups of the old result whose keys a slice of the
    new one cannot meet (results in a similar order of keys: the benchmark's 1 GB took a quarter less CPU);
    other columns' statistics cost a tenth of the loading's time and serve no query."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..csvio.common import TEXT

    schema = pa.schema([*((f"c{i}", TEXT) for i in range(width)), ("r", pa.int64())])
    if hashed:
        schema = schema.append(pa.field("h", pa.uint64()))
    return pq.ParquetWriter(path, schema, compression="lz4", use_dictionary=False, write_statistics=[*keyed, "r"])


def _numbered(block: pa.Table, first: int, schema: pa.Schema) -> pa.Table:
    """``block`` under the spool's schema (its text columns and ``r``), its rows numbered from ``first``."""
    import numpy as np
    import pyarrow as pa

    rows = pa.array(np.arange(first, first + block.num_rows, dtype=np.int64))
    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(block.columns, schema, strict=False)]
    return pa.table([*columns, rows], schema=pa.schema(list(schema)[: block.num_columns + 1]))


def literal(text: str) -> str:
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
