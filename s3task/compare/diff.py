"""The comparison itself, in DuckDB: first the rows that may differ, by their keys and their rows' hashes alone;
then only those rows' cells, compared column by column; only the rows that differ leave DuckDB.

One full outer join of two wide sides does not fit a small memory: DuckDB's hash join holds one side's rows
whole, and at 1 GB a side it ran out of memory at 128 MB however much it spilled; carrying every column
through a join of slices (the way before this one) took four fifths of the comparison's time. So the join is
narrow (:func:`_pair`): the new result a slice of consecutive rows at a time (:func:`slices`), each slice's
keys, row numbers and hashes (``h``, :mod:`.sides`) the build side of a join that reads the old result's keys
and hashes through once, skipping the row groups whose keys the slice cannot meet; a pair whose hashes are
equal is unchanged (two 64-bit hashes of different cells are equal once in 2^64; docs/COMPARE.md), and what
is left — the new rows without an old one, and the pairs whose hashes differ — goes to the table ``pairs``
(new row, old row). The old rows whose keys the new result lacks go to ``gone``, by a join on the keys alone.
Then each side is read through once more for those rows' cells only (``nc``, ``oc``: a twentieth of the rows
in the benchmark), and those are compared as before: for each column both sides have, whether its cell
changed (``x0``, ``x1``, …; "1.0" equals "1" in a number column, so a pair whose hashes differ may still be
unchanged), the rows added or changed leaving ordered by the new result's row, then the rows removed in the
old one's order. Each row leaves with the cells the highlighter shows (``o0``/``n0``, … for each of its
columns), batch by batch; the counts are summed from those batches as they pass (:func:`tally`): an
unchanged row never leaves DuckDB.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .sides import Side, literal, numeric_both
from .summary import Summary

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows of the new result a slice of the pairing join holds at most (its keys, row numbers and hashes).
SLICE_ROWS = 4_000_000

#: The bytes a row of a slice takes in DuckDB's join besides its keys' text (its row number, hash and the hash
#: table's own), for the slices' size.
ROW_BYTES = 40

#: The bytes a row of a slice takes when the rows of one side are found by their numbers (the join's hash table
#: and the Parquet writer's rows waiting to be written, on each of two threads: 64 MB held 700,000 rows in three
#: slices, not in two).
NUMBER_BYTES = 240

#: Rows of the differing rows' cells a join holds at most (the rows added or changed, with every column).
CELL_ROWS = 1_000_000

#: Rows a batch holds as it leaves DuckDB (16,384 took 25 MB more at the peak, 4,096 a tenth more CPU).
BATCH_ROWS = 8_192


def common_columns(old: Side, new: Side, keys: list[str]) -> list[str]:
    """The columns both sides have, in the new side's order, keys left out (they are equal by the join)."""
    return [n for n in new.names if old.has(n) and n not in keys]


def same(old: Side, new: Side, name: str) -> str:
    """SQL true when the cell of ``name`` is the same on both sides of a pair: as text, or as a number when
    the Parquet copy's rule makes the column a number on both sides ("1.0" = "1"; an empty cell equals only
    an empty one). Whole numbers on both sides compare exactly (HUGEINT), others as float64, as the copy's."""
    o, n = f"o.{old.col(name)}", f"n.{new.col(name)}"
    if not numeric_both(old, new, name):
        return f"({o} = {n})"
    whole = old.kinds[old.names.index(name)] == new.kinds[new.names.index(name)] == "int64"
    kind = "HUGEINT" if whole else "DOUBLE"
    return f"({o} = {n} OR coalesce(TRY_CAST({o} AS {kind}) = TRY_CAST({n} AS {kind}), false))"


def slices(side: Side, memory_mb: int, keys: bool = True) -> list[tuple[int, int]]:
    """A side's rows in slices (first row, row after the last) of at most :data:`SLICE_ROWS` rows that take
    about ``memory_mb`` MB in a join: with their ``keys`` (:data:`ROW_BYTES` a row besides the keys' text), or
    by their row numbers alone (:data:`NUMBER_BYTES` a row)."""
    held = side.key_bytes + side.rows * ROW_BYTES if keys else side.rows * NUMBER_BYTES
    count = max(1, -(-side.rows // SLICE_ROWS), -(-held // (max(64, memory_mb) << 20)))
    size = -(-side.rows // count) if side.rows else 1
    return [(first, min(first + size, side.rows)) for first in range(0, side.rows, size)]


def hashes(old: Side, new: Side, columns: list[str]) -> tuple[str, str]:
    """Each side's SQL for its rows' hash over ``columns``: the stored ``h`` when both hashed exactly these
    columns (the same columns but the keys on both sides), else computed here over them, in the same order."""
    if old.hashed is not None and old.hashed == new.hashed == sorted(columns):
        return "h", "h"
    if not columns:
        return "0::UBIGINT", "0::UBIGINT"
    return (
        f"hash({', '.join(old.col(c) for c in columns)})",
        f"hash({', '.join(new.col(c) for c in columns)})",
    )


def changes(
    con: Any, old: Side, new: Side, keys: list[str], columns: list[str], shown: list[str], memory_mb: int, folder: str
) -> Iterator[pa.RecordBatch]:
    """The rows that differ, as Arrow batches: ``added``, ``removed``, a flag ``x{i}`` for each of ``columns``
    (NULL on a row added or removed), and the old and new cells ``o{j}``, ``n{j}`` of each of ``shown`` (NULL
    on the side without the column or the row); in the highlighter's order. What the steps find on the way is
    kept in Parquet files in ``folder`` (:func:`_spool`)."""
    _pair(con, old, new, keys, columns, memory_mb, folder)
    _fetch(con, old, new, [*columns, *shown], memory_mb, folder)
    con.execute("SET threads = 1")  # the wide joins and their order: two threads ran out of memory at 128 MB
    flags = [f"NOT {same(old, new, name)} AS x{i}" for i, name in enumerate(columns)]
    differs = " OR ".join(["added", *(f"x{i}" for i in range(len(columns)))])
    picked = "".join(", " + c for c in flags + _cells(old, new, shown, "o", "n"))
    for where in _ranges(con, new, memory_mb):
        yield from con.sql(
            f"SELECT * EXCLUDE (nrow) FROM (SELECT n.r AS nrow, o.r IS NULL AS added, false AS removed{picked} "
            f"FROM oc o RIGHT JOIN (SELECT * FROM nc{where}) n ON o.r = n.orr) WHERE {differs} ORDER BY nrow"
        ).to_arrow_reader(BATCH_ROWS)
    picked = "".join(
        ", " + c for c in [f"NULL::BOOLEAN AS x{i}" for i in range(len(columns))] + _cells(old, new, shown, "o", None)
    )
    yield from con.sql(
        f"SELECT false AS added, true AS removed{picked} FROM oc o SEMI JOIN gone ON o.r = gone.r ORDER BY o.r"
    ).to_arrow_reader(BATCH_ROWS)


def _pair(con: Any, old: Side, new: Side, keys: list[str], columns: list[str], memory_mb: int, folder: str) -> None:
    """The views ``pairs`` (``nr``, ``orr``: the new rows without an old one, ``orr`` NULL, and the pairs whose
    hashes differ), a file for each slice of the new result, and ``gone`` (``r``: the old rows whose keys the
    new result lacks)."""
    on = " AND ".join(f"o.{old.col(k)} = n.{new.col(k)}" for k in keys)
    ohash, nhash = hashes(old, new, columns)
    okeys, nkeys = (", ".join(side.col(k) for k in keys) for side in (old, new))
    found = [
        f"SELECT n.r AS nr, o.r AS orr FROM (SELECT {okeys}, r, {ohash} AS h FROM {old.table}) o "
        f"RIGHT JOIN (SELECT {nkeys}, r, {nhash} AS h FROM {new.table} WHERE r >= {first} AND r < {stop}) n "
        f"ON {on} WHERE o.r IS NULL OR o.h <> n.h"
        for first, stop in slices(new, memory_mb) or [(0, 0)]
    ]
    _spool(con, folder, "pairs", *found)
    _spool(con, folder, "gone", f"SELECT o.r FROM {old.table} o ANTI JOIN (SELECT {nkeys} FROM {new.table}) n ON {on}")


def _fetch(con: Any, old: Side, new: Side, names: list[str], memory_mb: int, folder: str) -> None:
    """The views ``nc`` (the new rows of ``pairs``, with ``orr``) and ``oc`` (the old rows of ``pairs`` and
    ``gone``): their row numbers and the cells of ``names`` (each side's own); each side read once, a slice
    of its rows at a time, as the join holds only the row numbers of the slice's rows."""
    ncols, ocols = ("".join(f", {side.col(c)}" for c in dict.fromkeys(names) if side.has(c)) for side in (new, old))
    _spool(
        con,
        folder,
        "nc",
        *(
            f"SELECT p.orr, n.r{ncols} FROM (SELECT * FROM {new.table} WHERE r >= {first} AND r < {stop}) n "
            f"JOIN (SELECT * FROM pairs WHERE nr >= {first} AND nr < {stop}) p ON n.r = p.nr"
            for first, stop in slices(new, memory_mb, keys=False) or [(0, 0)]
        ),
    )
    _spool(
        con,
        folder,
        "oc",
        *(
            f"SELECT o.r{ocols} FROM (SELECT * FROM {old.table} WHERE r >= {first} AND r < {stop}) o SEMI JOIN "
            f"(SELECT orr AS r FROM pairs WHERE orr >= {first} AND orr < {stop} UNION ALL "
            f"SELECT r FROM gone WHERE r >= {first} AND r < {stop}) w ON o.r = w.r"
            for first, stop in slices(old, memory_mb, keys=False) or [(0, 0)]
        ),
    )


def _spool(con: Any, folder: str, name: str, *queries: str) -> None:
    """The rows of ``queries`` into Parquet files in ``folder`` (LZ4), read as the view ``name``: kept there,
    they leave DuckDB's memory to the joins after."""
    paths = []
    for i, query in enumerate(queries):
        paths.append(literal(os.path.join(folder, f"{name}-{i}.parquet")))
        con.execute(f"COPY ({query}) TO {paths[-1]} (FORMAT parquet, COMPRESSION lz4)")
    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet([{', '.join(paths)}])")


def _ranges(con: Any, new: Side, memory_mb: int) -> list[str]:
    """``nc``'s rows in ranges of ``r`` (as WHERE clauses, "" for all of them) whose cells fit the join: at most
    :data:`CELL_ROWS` rows and about a third of ``memory_mb`` MB of text each (DuckDB's strings take about
    twice their text in a join), split at approximate quantiles of ``r``."""
    rows = con.execute("SELECT count(*) FROM nc").fetchall()[0][0]
    text = new.text_bytes * rows // max(1, new.rows)
    count = max(1, -(-rows // CELL_ROWS), -(-text * 3 // (max(64, memory_mb) << 20)))
    if count == 1:
        return [""]
    cuts = con.execute(f"SELECT approx_quantile(r, {[i / count for i in range(1, count)]}) FROM nc").fetchall()[0][0]
    cuts = sorted(set(cuts))
    edges = [f"r < {cuts[0]}", *(f"r >= {a} AND r < {b}" for a, b in itertools.pairwise(cuts)), f"r >= {cuts[-1]}"]
    return [f" WHERE {edge}" for edge in edges]


def _cells(old: Side, new: Side, shown: list[str], o: str | None, n: str | None) -> list[str]:
    """The old and new cells of ``shown`` (``o{j}``, ``n{j}``) from the tables named ``o`` and ``n`` (NULL for a
    side without the column, or without the table)."""
    olds = [(f"{o}.{old.col(c)}" if o and old.has(c) else "NULL::VARCHAR") + f" AS o{j}" for j, c in enumerate(shown)]
    news = [(f"{n}.{new.col(c)}" if n and new.has(c) else "NULL::VARCHAR") + f" AS n{j}" for j, c in enumerate(shown)]
    return olds + news


def tally(summary: Summary, batch: pa.RecordBatch, columns: list[str]) -> None:
    """Add a batch of :func:`changes` to the counts: rows added, removed, changed; cells changed per column."""
    import pyarrow.compute as pc

    def trues(name: str) -> int:
        return int(pc.sum(batch.column(name)).as_py() or 0)

    added, removed = trues("added"), trues("removed")
    summary.added += added
    summary.removed += removed
    summary.changed += batch.num_rows - added - removed
    for i, name in enumerate(columns):
        summary.columns_changed[name] = summary.columns_changed.get(name, 0) + trues(f"x{i}")


def finish(summary: Summary, old: Side, columns: list[str]) -> Summary:
    """The counts once every batch is tallied: every column listed, the unchanged rows (each old row is paired
    or removed, the keys being unique)."""
    summary.columns_changed = {name: summary.columns_changed.get(name, 0) for name in columns}
    summary.cells_changed = sum(summary.columns_changed.values())
    summary.unchanged = old.rows - summary.removed - summary.changed
    return summary
