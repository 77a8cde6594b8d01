"""The steps that look at one row at a time, on Arrow (``pyarrow.compute``): columns, text, dates, numbers.

Each kind has three parts: the columns it needs, the columns the table has after it (so a list is
checked against a file's header before anything runs, and a step whose column an earlier step removed
says so), and what it does to a block. What it does returns the block and the cells it changed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import checks, dates, rows
from .block import Block, cells_changed
from .spec import StepError

if TYPE_CHECKING:
    import pyarrow as pa

    from .spec import Step

#: What a step remembers from block to block (the last filled cell above; a detected date format).
Memo = dict[str, Any]


@dataclass(frozen=True)
class Op:
    needs: Callable[[Step], list[str]]
    names_after: Callable[[Step, list[str]], list[str]]
    apply: Callable[[Step, Block, Memo], tuple[Block, int]]


def _same(step: Step, names: list[str]) -> list[str]:
    return names


def _listed(step: Step) -> list[str]:
    return list(step["columns"])


def _targets(step: Step, block: Block) -> list[str]:
    return list(step["columns"]) or block.names


def _map_cells(fn: Callable[[pa.ChunkedArray], pa.ChunkedArray]) -> Callable[[Step, Block, Memo], tuple[Block, int]]:
    def apply(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
        table, changed = block.table, 0
        for name in _targets(step, block):
            i = table.column_names.index(name)
            before = table.column(i)
            after = fn(before)
            changed += cells_changed(before, after)
            table = table.set_column(i, name, after)
        return block.with_table(table), changed

    return apply


def _new_names(step: Step, names: list[str], added: list[str], at: int | None = None) -> list[str]:
    """``names`` with ``added`` put at position ``at`` (None: at the end)."""
    taken = [n for n in added if n in names]
    if taken:
        raise step.fail(f"the table already has a column named {taken[0]!r}")
    if at is None:
        return names + added
    return names[:at] + added + names[at:]


# --- columns ---------------------------------------------------------------------------------


def _keep(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    return block.with_table(block.table.select(step["columns"])), 0


def _drop(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    return block.with_table(block.table.drop_columns(step["columns"])), 0


def _renamed(step: Step, names: list[str]) -> list[str]:
    out = [step["names"].get(n, n) for n in names]
    seen: set[str] = set()
    for name in out:
        if name in seen:
            raise step.fail(f"two columns would be named {name!r}")
        seen.add(name)
    return out


def _rename(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    return block.with_table(block.table.rename_columns(_renamed(step, block.names))), 0


def _reordered(step: Step, names: list[str]) -> list[str]:
    first = list(step["columns"])
    return first + [n for n in names if n not in first]


def _reorder(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    return block.with_table(block.table.select(_reordered(step, block.names))), 0


# --- rows --------------------------------------------------------------------------------------


def _keep_rows(keep: bool) -> Callable[[Step, Block, Memo], tuple[Block, int]]:
    import pyarrow.compute as pc

    def apply(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
        mask = rows.meets(step, block)
        return block.keep(mask if keep else pc.invert(mask)), 0

    return apply


# --- text --------------------------------------------------------------------------------------


def _replace(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    import pyarrow as pa
    import pyarrow.compute as pc

    v = step.values
    pairs = ([[v["find"], v["replace_with"]]] if v["find"] else []) + list(v["pairs"])

    def fn(column: pa.ChunkedArray) -> pa.ChunkedArray:
        for find, put in pairs:
            if v["whole_cell"]:
                same = pc.equal(pc.utf8_lower(column), find.lower()) if v["ignore_case"] else pc.equal(column, find)
                column = pc.if_else(same, pa.scalar(put, pa.large_string()), column)
            elif v["ignore_case"]:
                column = pc.replace_substring_regex(column, "(?i)" + re.escape(find), put.replace("\\", "\\\\"))
            else:
                column = pc.replace_substring(column, find, put)
        return column

    return _map_cells(fn)(step, block, memo)


def _check_replace(step: Step) -> None:
    if not step["find"] and not step["pairs"]:
        raise step.fail("say what to find: fill in Find (find), or Replacements (pairs)")


def _case(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    import pyarrow.compute as pc

    kernel = {"upper": pc.utf8_upper, "lower": pc.utf8_lower, "title": pc.utf8_title}[step["to"]]
    return _map_cells(kernel)(step, block, memo)


def _split_names(step: Step, names: list[str]) -> list[str]:
    base = names if step["keep_original"] else [n for n in names if n != step["column"]]
    at = names.index(step["column"]) + (1 if step["keep_original"] else 0)  # after it, or in its place
    return _new_names(step, base, list(step["into"]), at)


def _split(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    import pyarrow as pa
    import pyarrow.compute as pc

    column, into = step["column"], list(step["into"])
    pieces = pc.split_pattern(block.table.column(column), step["separator"], max_splits=len(into) - 1)
    pieces = pieces.combine_chunks() if isinstance(pieces, pa.ChunkedArray) else pieces
    new = [_part(pieces, i) for i in range(len(into))]
    names = _split_names(step, block.names)
    cells = {n: block.table.column(n) for n in block.names} | dict(zip(into, new, strict=True))
    table = pa.table([cells[n] for n in names], names=names)
    return block.with_table(table), block.num_rows * len(into)


def _part(pieces: pa.ListArray, i: int) -> pa.Array:
    """Part ``i`` of each cell's list of parts; "" where a cell has fewer parts."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = np.asarray(pieces.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    lengths = offsets[1:] - offsets[:-1]
    has = lengths > i
    if not len(pieces.values):
        return pa.array([""] * len(pieces), pa.large_string())
    taken = pieces.values.take(pa.array(np.where(has, offsets[:-1] + i, 0)))
    return pc.if_else(pa.array(has), taken, pa.scalar("", pa.large_string()))


def _join_names(step: Step, names: list[str]) -> list[str]:
    joined = list(step["columns"])
    base = names if step["keep_originals"] else [n for n in names if n not in joined]
    last = max(joined, key=names.index)
    at = sum(1 for n in names[: names.index(last) + 1] if n in base)  # after the last of them, or where it was
    return _new_names(step, base, [step["into"]], at)


def _join(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = [block.table.column(n) for n in step["columns"]]
    joined = pc.binary_join_element_wise(*columns, pa.scalar(step["separator"], pa.large_string()))
    names = _join_names(step, block.names)
    cells = {n: block.table.column(n) for n in block.names} | {step["into"]: joined}
    return block.with_table(pa.table([cells[n] for n in names], names=names)), block.num_rows


def _fill(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    import pyarrow as pa
    import pyarrow.compute as pc

    table, changed = block.table, 0
    for name in step["columns"]:
        i = table.column_names.index(name)
        before = table.column(i)
        empty = pc.equal(pc.utf8_trim_whitespace(before), "")
        if step["with"] == "value":
            after = pc.if_else(empty, pa.scalar(step["value"], pa.large_string()), before)
        else:  # the cell above: carried from the last block's last filled cell
            holes = pc.if_else(empty, pa.scalar(None, pa.large_string()), before)
            after = pc.fill_null_forward(holes.combine_chunks() if isinstance(holes, pa.ChunkedArray) else holes)
            carried = memo.get(name, "")
            after = pc.fill_null(after, carried)
            filled = pc.drop_null(holes)
            if len(filled):
                memo[name] = filled[-1].as_py()
        changed += cells_changed(before, after)
        table = table.set_column(i, name, after)
    return block.with_table(table), changed


def _format_dates(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    import pyarrow.compute as pc

    table, changed = block.table, 0
    for name in step["columns"]:
        i = table.column_names.index(name)
        before = table.column(i)
        fmt = step["from"]
        if fmt == "detect":  # found in the first block with dates, kept for the rest (one alone may fit two formats)
            fmt = memo.get(name) or dates.detect(before, f"{step.label}, column {name!r}")
            if pc.any(pc.not_equal(pc.utf8_trim_whitespace(before), "")).as_py():
                memo.setdefault(name, fmt)
        values, bad = dates.read_dates(before, fmt)
        after = pc.if_else(pc.is_valid(values), dates.write_dates(values, step["to"]), before)
        block = block.add_errors(bad, f"{name}: not a date written {fmt}")
        changed += cells_changed(before, after)
        table = table.set_column(i, name, after)
    return block.with_table(table), changed


def _check_dates(step: Step) -> None:
    if step["from"] != "detect":
        dates.check_format(f"{step.label}: Written as now", step["from"])
    dates.check_format(f"{step.label}: Write as", step["to"])


def _format_numbers(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    table, changed = block.table, 0
    for name in step["columns"]:
        i = table.column_names.index(name)
        before = table.column(i)
        after, bad = dates.plain_numbers(before, step["decimal"])
        block = block.add_errors(bad, f"{name}: not a number written with {step['decimal']!r} as its decimal mark")
        changed += cells_changed(before, after)
        table = table.set_column(i, name, after)
    return block.with_table(table), changed


def _check(step: Step, block: Block, memo: Memo) -> tuple[Block, int]:
    return checks.apply(step, block), 0


def _trim(column: Any) -> Any:
    import pyarrow.compute as pc

    return pc.utf8_trim_whitespace(column)


def _collapse(column: Any) -> Any:
    import pyarrow.compute as pc

    return pc.replace_substring_regex(column, r"\s+", " ")


def _kept(step: Step, names: list[str]) -> list[str]:
    return list(step["columns"])


def _dropped(step: Step, names: list[str]) -> list[str]:
    return [n for n in names if n not in step["columns"]]


def _split_needs(step: Step) -> list[str]:
    return [step["column"]]


def _added_by_lookup(step: Step, names: list[str]) -> list[str]:
    return _new_names(step, names, list(step["take"]))


OPS: dict[str, Op] = {
    "keep_columns": Op(_listed, _kept, _keep),
    "drop_columns": Op(_listed, _dropped, _drop),
    "rename_columns": Op(lambda s: list(s["names"]), _renamed, _rename),
    "reorder_columns": Op(_listed, _reordered, _reorder),
    "keep_rows": Op(rows.columns_of, _same, _keep_rows(True)),
    "remove_rows": Op(rows.columns_of, _same, _keep_rows(False)),
    "replace": Op(_listed, _same, _replace),
    "trim": Op(_listed, _same, _map_cells(_trim)),
    "collapse_spaces": Op(_listed, _same, _map_cells(_collapse)),
    "change_case": Op(_listed, _same, _case),
    "split_column": Op(_split_needs, _split_names, _split),
    "join_columns": Op(_listed, _join_names, _join),
    "fill_empty": Op(_listed, _same, _fill),
    "format_dates": Op(_listed, _same, _format_dates),
    "format_numbers": Op(_listed, _same, _format_numbers),
    "check": Op(checks.columns_of, _same, _check),
    # Whole-file kinds: their work is in s3task.steps.wholefile; here, what they need and leave.
    "remove_duplicates": Op(_listed, _same, lambda s, b, m: (b, 0)),
    "lookup": Op(lambda s: list(s["on"]), _added_by_lookup, lambda s, b, m: (b, 0)),
}

#: Checks a step makes of its own values, beyond their types (before any file is seen).
OWN_CHECKS: dict[str, Callable[[Step], None]] = {
    "replace": _check_replace,
    "format_dates": _check_dates,
    "check": checks.read_check,
}


def check_split(step: Step) -> None:
    if not step["separator"]:
        raise StepError(f"{step.label}: the separator is empty")


OWN_CHECKS["split_column"] = check_split
