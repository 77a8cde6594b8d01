"""The comparison itself, in DuckDB: the new result a slice at a time joined on the keys with the whole old one,
then the old rows whose keys are gone; only the rows that differ leave DuckDB.

One full outer join of two wide sides does not fit a small memory: DuckDB's hash join holds one side's rows
whole, and at 1 GB a side it ran out of memory at 128 MB however much it spilled. So the new result is taken
in slices of consecutive rows, each small enough for DuckDB to hold (:func:`slices`), and each slice is the
build side of a join that reads the old result through once; a slice's pairs are flagged, for each column both
sides have, whether its cell changed (``x0``, ``x1``, …), and its rows added or changed leave ordered, so the
slices one after another give them in the new result's order. The old rows whose keys the new result lacks
come last, in the old one's order, found by a join on the keys alone. Each row leaves with the cells the
highlighter shows (``o0``/``n0``, … for each of its columns), batch by batch; the counts are summed from those
batches as they pass (:func:`tally`): an unchanged row never leaves DuckDB.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .sides import Side, numeric_both
from .summary import Summary

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows of the new result a slice holds at most: DuckDB's hash join needs memory for each row it holds besides
#: the rows' bytes.
SLICE_ROWS = 1_000_000

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


def slices(new: Side, memory_mb: int) -> list[tuple[int, int]]:
    """The new result's rows in slices (first row, row after the last) of at most :data:`SLICE_ROWS` rows and
    about ``memory_mb`` MB of text each."""
    count = max(1, -(-new.rows // SLICE_ROWS), -(-new.text_bytes // (max(64, memory_mb) << 20)))
    size = -(-new.rows // count) if new.rows else 1
    return [(first, min(first + size, new.rows)) for first in range(0, new.rows, size)]


def changes(
    con: Any, old: Side, new: Side, keys: list[str], columns: list[str], shown: list[str], memory_mb: int
) -> Iterator[pa.RecordBatch]:
    """The rows that differ, as Arrow batches: ``added``, ``removed``, a flag ``x{i}`` for each of ``columns``
    (NULL on a row added or removed), and the old and new cells ``o{j}``, ``n{j}`` of each of ``shown`` (NULL
    on the side without the column or the row); in the highlighter's order."""
    on = " AND ".join(f"o.{old.col(k)} = n.{new.col(k)}" for k in keys)
    flags = [f"NOT {same(old, new, name)} AS x{i}" for i, name in enumerate(columns)]
    differs = " OR ".join(["added", *(f"x{i}" for i in range(len(columns)))])
    picked = "".join(", " + c for c in flags + _cells(old, new, shown, "o", "n"))
    for first, stop in slices(new, memory_mb):
        yield from con.sql(
            f"SELECT * EXCLUDE (nrow) FROM (SELECT n.r AS nrow, o.r IS NULL AS added, false AS removed{picked} "
            f"FROM {old.table} o RIGHT JOIN (SELECT * FROM {new.table} WHERE r >= {first} AND r < {stop}) n "
            f"ON {on}) WHERE {differs} ORDER BY nrow"
        ).to_arrow_reader(BATCH_ROWS)
    yield from _removed(con, old, new, keys, columns, shown)


def _removed(con: Any, old: Side, new: Side, keys: list[str], columns: list[str], shown: list[str]) -> Any:
    """The old rows whose keys the new result lacks, in the old result's order: their row numbers found on the
    keys alone, then their cells."""
    on = " AND ".join(f"o.{old.col(k)} = n.{new.col(k)}" for k in keys)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE gone AS SELECT o.r FROM {old.table} o ANTI JOIN "
        f"(SELECT {', '.join(new.col(k) for k in keys)} FROM {new.table}) n ON {on}"
    )
    picked = "".join(
        ", " + c for c in [f"NULL::BOOLEAN AS x{i}" for i in range(len(columns))] + _cells(old, new, shown, "o", None)
    )
    return con.sql(
        f"SELECT false AS added, true AS removed{picked} FROM {old.table} o SEMI JOIN gone ON o.r = gone.r ORDER BY o.r"
    ).to_arrow_reader(BATCH_ROWS)


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
