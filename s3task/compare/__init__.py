"""Compare two results by key columns: rows added, removed, changed and unchanged, and which cells changed.

    from s3task.compare import compare

    with open("changes.csv", "w", newline="", encoding="utf-8") as out:
        summary = compare(old_tables, new_tables, ["customer_id"], out=out, memory_mb=128, scratch="/tmp/x")
    print("\n".join(summary.lines()))      # "price changed in 4,210 rows", …
    summary.as_dict()                       # the same, JSON-able

Both sides are streams of Arrow tables of text, as the project's own reader gives them
(:meth:`s3task.results.Result.batches`); DuckDB never reads a result itself. Each side is spooled once to a
Parquet file in a scratch folder, which DuckDB reads with its memory limited and spilling to the same folder, so
neither side is ever held whole in Python or in DuckDB; the answer is a join of the new side's slices with the
old side (:mod:`.diff`), and the highlighter CSV (daff's format) is written batch by batch.

Pinned meanings (docs/COMPARE.md):

- a key column missing on either side is refused, naming the column and the side;
- keys repeated on either side are refused, naming the first ten repeated keys: rows are never paired by
  their order;
- keys compare as text, exactly; other cells compare as text too, except in a column that the Parquet copy's
  typing rule (:mod:`s3task.exports.parquet`) makes a number on both sides, where ``1.0`` equals ``1``;
- columns on one side only are reported as added or removed columns; rows are compared on the columns both
  sides have;
- a side without rows, and keys in any script, work.
"""

from __future__ import annotations

from .engine import compare, suggest_keys
from .summary import Summary

__all__ = ["Summary", "compare", "suggest_keys"]
