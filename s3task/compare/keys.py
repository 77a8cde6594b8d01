"""The key columns: present on both sides, unique on both (refused in words otherwise), or suggested."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from .sides import Side

#: Repeated keys named in a refusal, at most.
SHOWN = 10


def check_keys(con: Any, old: Side, new: Side, keys: list[str]) -> None:
    """Refuse keys that are not a column of both sides, or that repeat on either side."""
    if not keys:
        raise InvalidInput("name at least one key column")
    if len(set(keys)) != len(keys):
        raise InvalidInput(f"a key column is named twice: {', '.join(keys)}")
    for side in (old, new):
        for key in keys:
            if not side.has(key):
                shown = ", ".join(side.names[:20]) or "no columns"
                raise InvalidInput(f"the key column {key!r} is not in {side.label} (it has: {shown})")
    for side in (old, new):
        repeated = repeated_keys(con, side, keys)
        if repeated:
            raise InvalidInput(
                f"keys repeat in {side.label}, so its rows cannot be paired: {' + '.join(keys)} "
                f"{'; '.join(repeated)}{' (the first ten)' if len(repeated) == SHOWN else ''}; "
                "choose key columns whose values are unique, or remove the duplicates first"
            )


def repeated_keys(con: Any, side: Side, keys: list[str]) -> list[str]:
    """The first :data:`SHOWN` keys that repeat on ``side``, in the order they first appear, as text."""
    cols = ", ".join(side.col(k) for k in keys)
    # Whether any repeats first: without the first row of each key to order by, a third less work.
    if not con.execute(f"SELECT 1 FROM {side.table} GROUP BY {cols} HAVING count(*) > 1 LIMIT 1").fetchall():
        return []
    found = con.execute(
        f"SELECT {cols}, count(*) FROM {side.table} GROUP BY {cols} HAVING count(*) > 1 ORDER BY min(r) LIMIT {SHOWN}"
    ).fetchall()
    return [" + ".join(repr(v) for v in row[:-1]) + f" ({row[-1]:,} rows)" for row in found]


def suggest_keys(con: Any, old: Side, new: Side) -> list[str]:
    """The columns both sides have whose values are unique on each side (no empty value, no repeat)."""
    common = [n for n in old.names if new.has(n)]
    suggested = []
    for name in common:
        unique = True
        for side in (old, new):
            col = side.col(name)
            filled, distinct = con.execute(
                f"SELECT count(*) FILTER (WHERE {col} <> ''), count(DISTINCT {col}) FROM {side.table}"
            ).fetchall()[0]
            unique = unique and filled == side.rows and distinct == side.rows
        if unique:
            suggested.append(name)
    return suggested


def refuse_without_keys(suggested: list[str]) -> InvalidInput:
    """The refusal when no key was named: with the suggestion, never a silent guess."""
    if suggested:
        return InvalidInput(
            "name the key columns with --key; the columns whose values are unique in both results: "
            + ", ".join(suggested)
        )
    return InvalidInput(
        "name the key columns with --key; no single column has unique values in both results, "
        "so the key needs several columns (--key A,B)"
    )
