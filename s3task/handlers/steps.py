"""``steps``: "Prepare the table" — the list of steps and checks a person built (:mod:`s3task.steps`).

Its one parameter is the step list. It is read and checked when the task is made (every door: the New
task page, ``s3task submit --steps``, ``POST /api/tasks``, a recipe), checked against the file's header
before the task is queued, and run by the worker on Arrow blocks as they stream past (the whole-file
steps in DuckDB, within the attempt's memory cap, spilling to the attempt's scratch folder). The output is
the table after the last step with an ``error`` column last.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from . import Param, TaskType, register

if TYPE_CHECKING:
    import pyarrow as pa

    from ..steps.wholefile import Context


@register
class Steps(TaskType):
    name = "steps"
    title = "Prepare the table"
    description = (
        "Runs your own list of steps and checks over the file, in order: keep or remove columns and rows, find "
        "and replace, tidy spaces and case, split and join columns, fill empty cells, fix dates and numbers, "
        "remove duplicates, look up columns from another table, and check values. Rows that fail a check stay "
        "in the file with the check's words in the error column. Works on files of any size."
    )
    params = (Param("steps", "steps", default=None, required=True, help="The list of steps (JSON)."),)
    leaves_out_rows = True  # Keep rows / Remove rows / Remove duplicates leave rows out
    #: The engine hands this type Arrow tables, not pandas frames (s3task.processing), and keeps each output
    #: row's input row beside the output.
    takes_arrow = True
    numbers_rows = True

    def __init__(self, params: Mapping[str, Any]) -> None:
        super().__init__(self.validate(params))
        from ..steps import parse

        self.steps = parse(self.values["steps"])
        self.context: Context | None = None

    @classmethod
    def validate(cls, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        from ..errors import InvalidInput
        from ..steps import parse
        from ..steps.engine import check_values

        payload = dict(payload or {})
        unknown = sorted(set(payload) - {"steps"})
        if unknown:
            raise InvalidInput(f"the type {cls.name} ({cls.title}) has no parameter {', '.join(map(repr, unknown))}")
        if payload.get("steps") in (None, "", []):
            raise InvalidInput("the task needs its list of steps (parameter 'steps'): add at least one step")
        steps = parse(payload["steps"])
        check_values(steps)
        return {"steps": steps.to_json()}

    @classmethod
    def check_header(cls, params: Mapping[str, Any], names: list[str]) -> None:
        from ..steps import parse
        from ..steps.engine import require_columns

        require_columns(parse(params["steps"]), names)

    @classmethod
    def references(cls, params: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The tasks whose results the list looks up: (the step's label, the task's id)."""
        from ..steps import parse

        return [(s.label, s["reference"]) for s in parse(params["steps"]).active if s.kind.name == "lookup"]

    def stream(self, tables: Iterator[pa.Table]) -> Iterator[pa.Table]:
        from ..steps.engine import Runner

        self._runner = Runner(self.steps, self.context)
        return self._runner.run(tables, numbered=True)

    def step_counts(self) -> list[dict[str, int]]:
        runner = getattr(self, "_runner", None)
        if runner is None:
            return []
        return [
            {"step": n, "rows_in": c.rows_in, "rows_out": c.rows_out, "cells_changed": c.cells_changed}
            for n, c in sorted(runner.counts.items())
        ]
