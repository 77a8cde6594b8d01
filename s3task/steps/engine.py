"""Running a step list: checked against a header first, then block by block, whole-file steps in DuckDB.

:func:`check_columns` follows the columns through the list without reading a row, so an unknown column, a
column an earlier step removed or a name taken twice is found before anything runs (the submit check, the
CLI's ``steps check``, the builder's "this step cannot apply"). :class:`Runner` then takes the file's
blocks: runs of row-by-row steps apply to each block as it passes; a run of whole-file steps takes every
block before it into DuckDB (:mod:`s3task.steps.wholefile`) and gives the rows back in the file's order.
It counts, per step, the rows that went in and out and the cells it changed.

The output is the table after the last step with an ``error`` column last: empty for a row without
problems, else the words of every step and check the row failed, joined with "; ".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .block import ERRORS, ROW, Block
from .cells import OPS, OWN_CHECKS, Memo
from .spec import Step, StepError, StepList
from .wholefile import Context, FileSteps

if TYPE_CHECKING:
    import pyarrow as pa

ERROR_COLUMN = "error"


@dataclass
class Count:
    """One step's effect: rows in, rows out, cells changed (over what it saw: the file, or a preview's rows)."""

    rows_in: int = 0
    rows_out: int = 0
    cells_changed: int = 0


def check_values(steps: StepList) -> None:
    """Each step's own values beyond their types (a date format, a pattern), before any file is seen."""
    for step in steps.active:
        own = OWN_CHECKS.get(step.kind.name)
        if own is not None:
            own(step)


def value_problems(steps: StepList) -> dict[int, str]:
    """:func:`check_values`, every step's problem at once (by step number)."""
    problems: dict[int, str] = {}
    for step in steps.active:
        try:
            check_values(StepList((step,)))
        except StepError as e:
            problems[step.number] = e.message
    return problems


def check_columns(steps: StepList, names: list[str]) -> tuple[list[str], dict[int, str]]:
    """The columns after the list, and a problem per step that cannot apply to a table with ``names``.

    A step that cannot apply is passed over (the ones after it are checked as if it were off), so the
    builder can say at each step what is wrong with it.
    """
    problems: dict[int, str] = {}
    for reserved in (ROW, ERRORS):
        if reserved in names:
            problems[0] = f"the file has a column named {reserved!r}, a name s3task keeps for itself"
            return names, problems
    gone: dict[str, str] = {}
    for step in steps.active:
        op = OPS[step.kind.name]
        missing = [c for c in op.needs(step) if c not in names]
        if missing:
            name = missing[0]
            where = f" ({gone[name]})" if name in gone else ""
            problems[step.number] = f"{step.label}: the column {name!r} is not in the table{where}"
            continue
        try:
            after = op.names_after(step, names)
        except StepError as e:
            problems[step.number] = str(e)
            continue
        for old in names:
            if old not in after:
                gone[old] = f"{step.label} removed or renamed it"
        names = after
    if ERROR_COLUMN in names:
        problems[-1] = (
            f"after the steps the table has a column named {ERROR_COLUMN!r}, the name of the column the task adds "
            "for each row's problems: rename or remove it with a step"
        )
    return names, problems


def require_columns(steps: StepList, names: list[str]) -> list[str]:
    """:func:`check_columns`, raising the first problem."""
    after, problems = check_columns(steps, names)
    if problems:
        raise StepError(problems[min(problems, key=lambda n: (n <= 0 and n != 0, n))])
    return after


class Runner:
    """Runs a step list over a stream of blocks (see the module's description)."""

    def __init__(self, steps: StepList, context: Context | None = None) -> None:
        self.steps, self.context = steps, context or Context()
        self.counts: dict[int, Count] = {s.number: Count() for s in steps.active}
        self._memo: dict[int, Memo] = {s.number: {} for s in steps.active}

    def run(self, tables: Iterator[pa.Table], *, numbered: bool = False) -> Iterator[pa.Table]:
        """The output tables (the table's columns, then ``error``) for the input tables, in order;
        ``numbered``: then each row's input record number (int64, 0 = the first row after the header)."""
        import pyarrow as pa

        blocks: Iterator[Block] = self._numbered(tables)
        for whole, segment in self._segments():
            blocks = self._whole(segment, blocks) if whole else self._rowwise(segment, blocks)
        for block in blocks:
            out = block.table.append_column(ERROR_COLUMN, block.errors.cast(pa.large_string()))
            yield out.append_column(ROW, block.row) if numbered else out

    def _numbered(self, tables: Iterator[pa.Table]) -> Iterator[Block]:
        at = 0
        for table in tables:
            yield Block.start(table, at)
            at += table.num_rows

    def _segments(self) -> list[tuple[bool, list[Step]]]:
        """Runs of row-by-row steps and of whole-file steps, in order. A check runs row by row; a unique
        check's uniqueness then runs with the whole-file steps."""
        out: list[tuple[bool, list[Step]]] = []
        for step in self.steps.active:
            whole = step.kind.whole_file
            parts = ([] if whole else [False]) + ([True] if whole or _unique(step) else [])
            for whole in parts:
                if out and out[-1][0] == whole:
                    out[-1][1].append(step)
                else:
                    out.append((whole, [step]))
        return out

    def _rowwise(self, steps: list[Step], blocks: Iterator[Block]) -> Iterator[Block]:
        for block in blocks:
            for step in steps:
                count = self.counts[step.number]
                count.rows_in += block.num_rows
                block, changed = OPS[step.kind.name].apply(step, block, self._memo[step.number])
                count.rows_out += block.num_rows
                count.cells_changed += changed
            yield block

    def _whole(self, steps: list[Step], blocks: Iterator[Block]) -> Iterator[Block]:
        run = FileSteps(steps, self.context)
        yield from run.run(blocks)
        for number, (rows_in, rows_out, changed) in run.counts.items():
            count = self.counts[number]
            if self.steps.steps[number - 1].kind.check:  # its row part counted the rows already
                count.cells_changed += changed
            else:
                count.rows_in, count.rows_out, count.cells_changed = rows_in, rows_out, changed


def _unique(step: Step) -> bool:
    return step.kind.check and bool(step["unique"])
