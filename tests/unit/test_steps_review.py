"""What an outside review of the step lists found, each pinned (issue 32): names that differ only in case,
a reference's values as produced (not as the CSV protects them), a list that leaves no column to compare,
JSON nested past Python's limit, and digits that are not ASCII."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from worked import worked

from s3task.layout import Layout
from s3task.steps import StepError, parse
from s3task.steps.engine import Runner, value_problems
from s3task.steps.references import reference_rows
from s3task.steps.wholefile import Context
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ADA = Actor("ada")


def table(**columns: list[str]) -> pa.Table:
    return pa.table({k: pa.array(v, pa.large_string()) for k, v in columns.items()})


def run(steps: list[dict], *tables: pa.Table, context: Context | None = None) -> list[dict]:
    return [row for t in Runner(parse(steps), context).run(iter(tables)) for row in t.to_pylist()]


def test_columns_that_differ_only_in_case_are_refused_not_mixed_up() -> None:
    rows = table(Name=["Ann", "Ann"], name=["1", "2"])  # not duplicates: "name" differs
    with pytest.raises(
        StepError, match=r"^Step 1 \(Remove duplicate rows\): the table has the columns 'Name' and 'name'"
    ):
        run([{"step": "remove_duplicates"}], rows)


def test_a_lookup_reads_the_reference_as_produced(tmp_path: Path) -> None:
    service = TaskService(LocalStore(tmp_path / "store"), Layout())
    reference = worked(service, ADA, b"k,v\n+44 20 7946 0000,phone\n=1+1,formula\nplain,=SUM(A1)\n", task_type="copy")
    context = Context(open_reference=lambda t: reference_rows(service.store, service.layout, t))
    rows = run(
        [{"step": "lookup", "reference": reference.task_id, "on": ["k"], "take": ["v"]}],
        table(k=["+44 20 7946 0000", "=1+1", "plain"]),
        context=context,
    )
    assert [(r["v"], r["error"]) for r in rows] == [("phone", ""), ("formula", ""), ("=SUM(A1)", "")]


def test_a_list_that_leaves_no_column_says_so() -> None:
    with pytest.raises(StepError, match=r"^Step 2 \(Remove duplicate rows\): the table has no columns left"):
        run([{"step": "drop_columns", "columns": ["a"]}, {"step": "remove_duplicates"}], table(a=["1"]))


def test_json_nested_past_pythons_limit_is_refused_in_words() -> None:
    with pytest.raises(StepError, match="not valid JSON"):
        parse("[" * 20000 + "]" * 20000)


def test_a_bound_in_other_digits_is_refused() -> None:
    steps = parse([{"step": "check", "column": "n", "type": "number", "minimum": "١٠"}])
    assert value_problems(steps) == {1: "Step 1 (Check values): minimum '١٠' is not a number"}
