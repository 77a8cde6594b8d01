"""The builder's preview: a step list run over a file's first rows, with each step's effect and problems.

The preview runs the same code the worker runs, over at most :data:`PREVIEW_ROWS` rows. A step that cannot
apply (its column is gone, a date format it cannot tell, a reference it cannot read) is named with its
words; the table shown is the one after the steps before it, and the steps after it are checked as if it
were off, so every problem in the list shows at once. Whole-file steps (remove duplicates, unique, lookup)
count only these rows: the page says so ("in these 200 rows").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .engine import Count, Runner, check_columns, value_problems
from .spec import StepError, StepList
from .wholefile import Context

if TYPE_CHECKING:
    import pyarrow as pa

PREVIEW_ROWS = 200
_NUMBER = re.compile(r"^Step (\d+)\b")


@dataclass
class Preview:
    #: The first rows after every step that could run (its columns, then ``error``).
    table: pa.Table
    #: Each step's effect on these rows, by its number (1 = the first).
    counts: dict[int, Count] = field(default_factory=dict)
    #: What is wrong, by step number; 0: the file itself, -1: the list as a whole (after its last step).
    problems: dict[int, str] = field(default_factory=dict)
    #: The numbers of the steps that need the whole file: their counts are only for these rows.
    whole_file: frozenset[int] = frozenset()
    rows: int = 0


def preview(steps: StepList, table: pa.Table, context: Context | None = None) -> Preview:
    """``steps`` over the first :data:`PREVIEW_ROWS` rows of ``table`` (every column text)."""
    sample = table.slice(0, PREVIEW_ROWS)
    problems = value_problems(steps)
    _names, found = check_columns(_without(steps, set(problems)), list(sample.column_names))
    problems.update(found)
    if 0 in problems:
        return Preview(sample, problems=problems, rows=sample.num_rows)
    for _ in range(len(steps.steps) + 1):
        runner = Runner(_without(steps, set(problems)), context or Context(memory_mb=128))
        try:
            out = _concat([t for t in runner.run(iter([sample]))], sample)
        except StepError as e:
            number = _number_of(e)
            if number in problems or number <= 0:
                raise
            problems[number] = e.message
            continue
        whole = frozenset(s.number for s in steps.active if s.kind.whole_file or (s.kind.check and s["unique"]))
        return Preview(out, runner.counts, problems, whole, sample.num_rows)
    raise AssertionError("unreachable: each pass turns one more step off")


def _without(steps: StepList, numbers: set[int]) -> StepList:
    """The list with the steps numbered in ``numbers`` turned off (numbers kept as they were)."""
    return StepList(tuple(replace(s, off=True) if s.number in numbers else s for s in steps.steps))


def _number_of(error: StepError) -> int:
    if error.step is not None:
        return error.step
    found = _NUMBER.match(error.message)
    return int(found.group(1)) if found else -1


def _concat(tables: list[pa.Table], sample: pa.Table) -> pa.Table:
    import pyarrow as pa

    return pa.concat_tables(tables) if tables else sample
