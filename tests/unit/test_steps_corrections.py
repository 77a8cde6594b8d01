"""A "Prepare the table" task leaves rows out, yet its rows with errors go back and forth as any task's do
(issue 32): the errors workbook has each row's number in the file and its cells as read; the corrected rows
run through the same steps; the combined result has every fix, in place, and a row that a fix now makes the
steps leave out is left out of it too."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import openpyxl
import pytest
from conftest import wait_for
from worked import work, worked

from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ADA = Actor("ada")
#: Excel rows: 1 the header, 2 Ann, 3 Bob (South: left out), 4 blank, 5 Cy (a bad address), 6 Dee
#: (a bad date), 7 Eve (a bad address), 8 Fay.
ORDERS = (
    b"Name,Region,Email,Ordered\r\n"
    b"Ann,North,ann@example.com,01/02/2024\r\n"
    b"Bob,South,bob@example.com,02/02/2024\r\n"
    b"\r\n"
    b"Cy,North,cy at example.com,03/02/2024\r\n"
    b"Dee,North,dee@example.com,31/02/2024\r\n"
    b"Eve,North,eve@@example.com,04/02/2024\r\n"
    b"Fay,North,fay@example.com,05/02/2024\r\n"
)
STEPS = {"steps": [
    {"step": "keep_rows", "conditions": [{"column": "Region", "is": "equals", "value": "North"}]},
    {"step": "format_dates", "columns": ["Ordered"], "from": "DD/MM/YYYY"},
    {"step": "check", "column": "Email", "format": "email"},
]}  # fmt: skip


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def errors_book(service: TaskService, task_id: str) -> openpyxl.Workbook:
    service.ensure_output(ADA, task_id, "errors-xlsx")
    with service.open_output(ADA, task_id, "errors-xlsx") as f:
        return openpyxl.load_workbook(io.BytesIO(f.read()))


def rows_of(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def test_the_errors_workbook_the_corrections_and_the_combined_result_of_a_step_list(service: TaskService) -> None:
    original = worked(service, ADA, ORDERS, name="Orders", task_type="steps", payload=STEPS)
    assert (original.row_count, original.error_count) == (5, 3)
    sheet = errors_book(service, original.task_id).active
    got = [[c.value for c in row] for row in sheet.iter_rows()]
    assert got == [
        ["error", "row in file", "Name", "Region", "Email", "Ordered"],
        ["Email: not an email address", "5", "Cy", "North", "cy at example.com", "03/02/2024"],
        ["Ordered: not a date written DD/MM/YYYY", "6", "Dee", "North", "dee@example.com", "31/02/2024"],
        ["Email: not an email address", "7", "Eve", "North", "eve@@example.com", "04/02/2024"],
    ]  # each row's number in the file, and its cells as read (the date as it was, not as the steps wrote it)
    sheet.cell(2, 5).value = "cy@example.com"  # Cy's address fixed
    sheet.cell(3, 6).value = "28/02/2024"  # Dee's date fixed
    sheet.cell(4, 4).value = "South"  # Eve is not a North customer after all: the steps now leave her out
    saved = io.BytesIO()
    sheet.parent.save(saved)
    correction = service.submit_correction(ADA, original.task_id, saved.getvalue())
    done = work(service, correction.task_id)
    assert (done.row_count, done.error_count) == (2, 0)
    service.prepare_combined(ADA, original.task_id)
    state = wait_for(lambda: (s := service.combined_state(ADA, original.task_id)).kind != "preparing" and s, 60)
    assert state.kind == "ready", state
    with service.open_combined(ADA, original.task_id) as f:
        combined = rows_of(f.read())
    assert combined == [
        ["Name", "Region", "Email", "Ordered", "error"],
        ["Ann", "North", "ann@example.com", "2024-02-01", ""],
        ["Cy", "North", "cy@example.com", "2024-02-03", ""],
        ["Dee", "North", "dee@example.com", "2024-02-28", ""],
        ["Fay", "North", "fay@example.com", "2024-02-05", ""],
    ]
