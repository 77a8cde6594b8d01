"""The comparison itself, in DuckDB: one full outer join on the keys, kept as row numbers and flags.

The join's own table, ``d``, holds for each key the old row's number, the new row's, and for each column both
sides have whether its cell changed (``x0``, ``x1``, …): small, whatever the width of the rows. The counts
and the per-column summary are one pass over it; the highlighter joins the rows back for the few that differ.
"""

from __future__ import annotations

from typing import Any

from .sides import Side, numeric_both
from .summary import Summary


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


def join(con: Any, old: Side, new: Side, keys: list[str], columns: list[str]) -> None:
    """The table ``d``: each key's old and new row number (NULL on the side without it) and change flags."""
    on = " AND ".join(f"o.{old.col(k)} = n.{new.col(k)}" for k in keys)
    flags = [f"NOT {same(old, new, name)} AS x{i}" for i, name in enumerate(columns)]
    con.execute(
        f"CREATE TABLE d AS SELECT o.r AS orow, n.r AS nrow{''.join(', ' + f for f in flags)} "
        f"FROM {old.table} o FULL OUTER JOIN {new.table} n ON {on}"
    )


def changed_expr(columns: list[str]) -> str:
    """SQL true for a pair with at least one changed cell."""
    return "(" + " OR ".join(f"x{i}" for i in range(len(columns))) + ")" if columns else "false"


def count(con: Any, keys: list[str], columns: list[str]) -> Summary:
    """The counts from ``d``: rows added, removed, changed, unchanged; cells changed in each column."""
    both = "orow IS NOT NULL AND nrow IS NOT NULL"
    changed = changed_expr(columns)
    per_column = [f"count(*) FILTER (WHERE {both} AND x{i})" for i in range(len(columns))]
    row = con.execute(
        "SELECT count(*) FILTER (WHERE orow IS NULL), count(*) FILTER (WHERE nrow IS NULL), "
        f"count(*) FILTER (WHERE {both} AND {changed}), count(*) FILTER (WHERE {both} AND NOT {changed})"
        f"{''.join(', ' + c for c in per_column)} FROM d"
    ).fetchall()[0]
    per = dict(zip(columns, (int(n) for n in row[4:]), strict=True))
    return Summary(
        keys=list(keys),
        added=int(row[0]),
        removed=int(row[1]),
        changed=int(row[2]),
        unchanged=int(row[3]),
        cells_changed=sum(per.values()),
        columns_changed=per,
    )
