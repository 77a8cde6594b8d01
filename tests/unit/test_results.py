"""Results in a notebook (s3task/results.py, docs/NOTEBOOKS.md): the example of docs/NOTEBOOKS.md run as it
is written there, over a completed task in a local store; the values exact (no spreadsheet guard), text in
frames and typed in the Parquet copy; only the rows with errors; the combined result after a correction;
chunks of the size asked that never hold the whole result; the same through moto's HTTP S3 with the
caller's own credentials; and each wrong call refused in words."""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pyarrow as pa
import pytest
from procs import MOTO_AWS
from support import csv_bytes, doc_example
from worked import work, worked

from s3task import results
from s3task.errors import AccessDenied, CannotExport, InvalidInput, InvalidTransition, TaskNotFound
from s3task.layout import Layout
from s3task.store import open_store
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ROOT = Path(__file__).resolve().parents[2]
ANN = Actor("ann")
ROWS = [
    ["customer", "email", "amount", "code"],
    ["C1", "ann@example.com", "12", "007"],
    ["C2", "bob at example.com", "-3", "010"],
    ["C3", "=SUM(A1)", "40", "+44"],
    ["C4", "dee@example.com", "5", "1"],
    ["C5", "eve@example.com", "7", "2"],
]


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TaskService:
    monkeypatch.setenv("S3TASK_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("S3TASK_USER", "ann")
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def test_the_example_of_the_docs_runs_as_written(local: TaskService) -> None:
    task_id = worked(local, ANN, csv_bytes(ROWS), name="Customers").task_id
    names: dict[str, object] = {"task_id": task_id}
    exec(compile(doc_example("NOTEBOOKS.md"), "docs/NOTEBOOKS.md", "exec"), names)
    columns = names["columns"]
    assert columns[:4] == ["customer", "email", "amount", "code"] and "error" in columns
    assert names["sizes"] == [2, 2, 1]
    frame = names["frame"]
    assert frame["email"].tolist()[2] == "=SUM(A1)"  # exact: the stored CSV's guard taken off
    assert frame["code"].tolist() == ["007", "010", "+44", "1", "2"]  # text: codes stay codes
    table = names["table"]
    assert isinstance(table, pa.Table) and table.schema.field("amount").type == pa.int64()
    assert table.column("amount").to_pylist() == [12, -3, 40, 5, 7]
    assert table.schema.field("code").type == pa.string()  # 007 is a code, not a number
    errors = names["errors"]
    assert errors["customer"].tolist() == ["C2", "C3"]  # the two addresses that are not addresses
    assert all(errors["error"].str.len() > 0)
    # The next block: DuckDB and Polars over that Arrow table, as written there.
    exec(compile(doc_example("NOTEBOOKS.md", 1), "docs/NOTEBOOKS.md", "exec"), names)
    assert names["top"]["customer"].tolist() == ["C3", "C1"] and names["top"]["amount"].tolist() == [40, 12]
    assert names["lazy"]["customer"].to_list() == ["C1", "C3", "C4", "C5"]  # amount > 0, typed as a number


@pytest.mark.slow  # 8 s: a 30 MB result
def test_chunks_hold_a_part_of_the_result_never_all_of_it(local: TaskService) -> None:
    rows = [["id", "email", "note"]] + [[str(i), f"c{i}@example.com", "x" * 60] for i in range(300_000)]
    task_id = worked(local, ANN, csv_bytes(rows), name="Big", task_type="copy").task_id
    result = results.open(task_id)
    whole = sum(table.nbytes for table in result.batches())  # the result in Arrow: about 30 MB
    base, sizes, peak, ids = pa.total_allocated_bytes(), [], 0, []
    for chunk in result.chunks(rows=7000):
        sizes.append(len(chunk))
        ids.append(chunk["id"].iloc[0])
        peak = max(peak, pa.total_allocated_bytes() - base)
        del chunk
    assert sizes == [7000] * 42 + [6000] and ids == [str(n) for n in range(0, 300_000, 7000)]
    assert peak < whole / 2, (peak, whole)  # a block of the reader's and a chunk, not the result


def test_the_combined_result_has_the_corrections_applied(local: TaskService) -> None:
    task_id = worked(local, ANN, csv_bytes(ROWS), name="Customers").task_id
    local.ensure_output(ANN, task_id, "errors-xlsx")
    with local.open_output(ANN, task_id, "errors-xlsx") as f:
        book = openpyxl.load_workbook(io.BytesIO(f.read()))
    sheet = book.active
    header = [c.value for c in sheet[1]]
    at = header.index("email") + 1
    for row in range(2, sheet.max_row + 1):  # staff fix both addresses in Excel and send the rows back
        sheet.cell(row, at).value = {"C2": "bob@example.com", "C3": "cy@example.com"}[sheet.cell(row, at - 1).value]
    out = io.BytesIO()
    book.save(out)
    work(local, local.submit_correction(ANN, task_id, out.getvalue()).task_id)
    combined = results.open(task_id, rows="combined").frame()
    assert combined["email"].tolist() == [
        "ann@example.com", "bob@example.com", "cy@example.com", "dee@example.com", "eve@example.com",
    ]  # fmt: skip
    assert combined["error"].tolist() == [""] * 5


@pytest.mark.slow  # a moto server
def test_over_http_s3_with_the_callers_own_credentials(moto_http_bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint, bucket = moto_http_bucket
    for name, value in {**MOTO_AWS, "AWS_ENDPOINT_URL_S3": endpoint, "S3TASK_USER": "ann"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("S3TASK_STORE", raising=False)
    store, layout = open_store(f"s3://{bucket}/batch-tasks")
    task_id = worked(TaskService(store, layout), ANN, csv_bytes(ROWS), name="Customers").task_id
    result = results.open(task_id, store=f"s3://{bucket}/batch-tasks")
    assert result.frame()["customer"].tolist() == ["C1", "C2", "C3", "C4", "C5"]
    assert result.arrow().column("amount").to_pylist() == [12, -3, 40, 5, 7]


def test_each_wrong_call_is_refused_in_words(local: TaskService, monkeypatch: pytest.MonkeyPatch) -> None:
    done = worked(local, ANN, csv_bytes(ROWS), name="Customers").task_id
    waiting = local.create(ANN, "Not sent", "copy").record.task_id
    with pytest.raises(InvalidInput, match="rows must be one of all, errors, combined, not 'some'"):
        results.open(done, rows="some")  # type: ignore[arg-type]
    with pytest.raises(InvalidTransition, match="there is no output yet"):
        results.open(waiting)
    with pytest.raises(TaskNotFound):
        results.open("0" * 26)
    with pytest.raises(InvalidInput, match="at least 1"):
        next(results.open(done).chunks(rows=0))
    with pytest.raises(InvalidInput, match="the Parquet copy is of the whole result"):
        results.open(done, rows="errors").arrow()
    monkeypatch.setenv("S3TASK_CLI_OPERATOR", "0")
    with pytest.raises(AccessDenied, match="belongs to ann; only they or an operator can download the output"):
        results.open(done, user="bob")  # another user's task, to a reader who is no operator
    assert results.open(done, user="ann").columns()[0] == "customer"


def test_a_result_without_rows_is_one_empty_chunk_and_copies_there_are_not_are_said(local: TaskService) -> None:
    empty = worked(local, ANN, b"id,name\n", name="Empty", task_type="copy").task_id
    (chunk,) = list(results.open(empty).chunks(rows=10))
    assert list(chunk.columns) == ["id", "name"] and len(chunk) == 0
    assert results.open(empty).frame().shape == (0, 2)
    with pytest.raises(CannotExport):  # a copy task has no error column: there are no rows with errors
        results.open(empty, rows="errors").frame()
    with pytest.raises(CannotExport):  # no correction has completed: there is no combined result
        results.open(empty, rows="combined").frame()
