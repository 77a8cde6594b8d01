"""What a correction writes on its original, and where: nothing when it is refused; no more than
MAX_CORRECTIONS ids and no history entries (the original's own steps stay in its timeline); and rows sent
from a correction's page make a correction of the original, numbered as the original's file, so the
original's combined result has every fix."""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from app_pages import app, options, service, store_dir  # noqa: F401
from support import csv_bytes
from worked import work, worked

from s3task.errors import InvalidTransition, TooManyRequests
from s3task.layout import Layout
from s3task.record import MAX_CORRECTIONS, TaskRecord, new_write_id
from s3task.records import read_record, update_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.limits import CreateLimits

ADA = Actor("ada")
ANN = Actor("ann")
#: Excel rows: 1 header, 2 ok, 3 bad (Bob), 4 ok, 5 bad (Dee).
ROWS = [
    ["name", "mail"],
    ["Ada", "ada@example.com"],
    ["Bob", "bob at example.com"],
    ["Cy", "cy@example.com"],
    ["Dee", "dee@"],
]
OWN_STEPS = ["create", "submit", "claim", "complete"]


def finished(tasks: TaskService, actor: Actor = ADA) -> TaskRecord:
    return worked(tasks, actor, csv_bytes(ROWS))


def book_rows(tasks: TaskService, task_id: str, actor: Actor = ADA) -> list[list[str]]:
    tasks.ensure_output(actor, task_id, "errors-xlsx")
    with tasks.open_output(actor, task_id, "errors-xlsx") as f:
        book = openpyxl.load_workbook(io.BytesIO(f.read()))
    return [list(r) for r in book.active.iter_rows(values_only=True)]


def fixed(rows: list[list[str]], fixes: dict[str, str]) -> bytes:
    """The workbook's rows saved as staff save them, each address ``fixes`` names replaced (others as they were)."""
    book = openpyxl.Workbook()
    book.active.append(rows[0])
    for row in rows[1:]:
        book.active.append([*row[:3], fixes.get(row[3], row[3])])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def stored(tasks: TaskService, task_id: str) -> TaskRecord:
    return read_record(tasks.store, tasks.layout, task_id)[0]


def test_a_correction_refused_by_the_create_limit_writes_nothing_on_the_original(tmp_path: Path) -> None:
    tasks = TaskService(LocalStore(tmp_path / "store"), Layout(), limits=CreateLimits(per_minute=2))
    original = finished(tasks)  # the first create of the minute
    data = fixed(book_rows(tasks, original.task_id), {"bob at example.com": "bob@example.com"})
    made = tasks.submit_correction(ADA, original.task_id, data)  # the second
    before = stored(tasks, original.task_id)
    for _ in range(3):
        with pytest.raises(TooManyRequests):
            tasks.submit_correction(ADA, original.task_id, data)
    after = stored(tasks, original.task_id)
    assert after.corrections == [made.task_id] and after.revision == before.revision
    assert [c.task_id for c in tasks.corrections_of(ADA, original.task_id)] == [made.task_id]


def test_a_task_takes_at_most_max_corrections_and_keeps_its_own_steps(tmp_path: Path) -> None:
    tasks = TaskService(LocalStore(tmp_path / "store"), Layout(), limits=CreateLimits(per_minute=0))
    original = finished(tasks)
    data = fixed(book_rows(tasks, original.task_id), {"bob at example.com": "bob@example.com"})
    for _ in range(MAX_CORRECTIONS):
        tasks.submit_correction(ADA, original.task_id, data)
    full = stored(tasks, original.task_id)
    with pytest.raises(InvalidTransition, match=f"this task has {MAX_CORRECTIONS} corrections already"):
        tasks.submit_correction(ADA, original.task_id, data)
    after = stored(tasks, original.task_id)
    assert len(after.corrections) == MAX_CORRECTIONS and after.revision == full.revision
    assert len(tasks.corrections_of(ADA, original.task_id)) == MAX_CORRECTIONS  # none made for the refusal
    # The corrections list is their record: the timeline is still the task's own steps, first to last.
    assert [h["event"] for h in after.history] == OWN_STEPS


def test_rows_fixed_on_a_correction_page_correct_the_original_with_its_row_numbers(tmp_path: Path) -> None:
    tasks = TaskService(LocalStore(tmp_path / "store"), Layout())
    original = finished(tasks)
    first = book_rows(tasks, original.task_id)
    assert [r[1] for r in first[1:]] == ["3", "5"]  # Bob, Dee in the staff's file
    c1 = tasks.submit_correction(ADA, original.task_id, fixed(first, {"bob at example.com": "bob@example.com"}))
    c1 = work(tasks, c1.task_id)
    # Dee is row 2 of c1's own input, but the staff's file has her at row 5: the workbook says 5.
    left = book_rows(tasks, c1.task_id)
    assert [(r[1], r[2]) for r in left[1:]] == [("5", "Dee")]
    c2 = tasks.submit_correction(ADA, c1.task_id, fixed(left, {"dee@": "dee@example.com"}))
    c2 = work(tasks, c2.task_id)
    assert c1.task_name == "March list (correction 1)"  # numbered in the order they were sent (issue 36 item 15)
    assert c2.corrects == original.task_id and c2.task_name == "March list (correction 2)"
    assert stored(tasks, original.task_id).corrections == [c1.task_id, c2.task_id]
    assert stored(tasks, c1.task_id).corrections == []
    tasks.ensure_combined(ADA, original.task_id)
    with tasks.open_combined(ADA, original.task_id) as f:
        combined = pd.read_csv(f, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert combined["mail"].tolist() == ["ada@example.com", "bob@example.com", "cy@example.com", "dee@example.com"]
    assert (combined["error"] == "").all()


def test_the_timeline_says_in_words_a_correction_an_older_record_lists(app, service: TaskService) -> None:  # noqa: F811
    original = finished(service, ANN)

    def older(r: TaskRecord, now: object) -> TaskRecord:  # a record written when a correction was a history entry
        entry = {"at": r.updated_at, "event": "correct", "attempt": r.attempt_id}
        return r.replace(history=[*r.history, entry], revision=r.revision + 1, write_id=new_write_id())

    update_record(service.store, service.layout, original.task_id, older)
    at = app("ann")
    at.run()
    at.query_params["id"] = original.task_id
    at = at.switch_page("pages/task.py").run()
    assert not at.exception, at.exception
    timeline = next(d.value for d in at.dataframe if list(d.value.columns) == ["When", "What"])
    assert timeline["What"].tolist()[-1] == "Corrected rows sent to a new task"
    assert "correct" not in timeline["What"].tolist()


def test_a_correction_page_says_its_rows_sent_back_go_to_the_original(app, service: TaskService) -> None:  # noqa: F811
    original = finished(service, ANN)
    rows = book_rows(service, original.task_id, ANN)
    c1 = service.submit_correction(ANN, original.task_id, fixed(rows, {"bob at example.com": "bob@example.com"}))
    work(service, c1.task_id)  # Dee still wrong: the correction's page offers the round trip again
    at = app("ann")
    at.run()
    at.query_params["id"] = c1.task_id
    at = at.switch_page("pages/task.py").run()
    assert not at.exception, at.exception
    assert "Upload the corrected rows" in [e.label for e in at.expander]
    said = [c.value for c in at.caption if "runs only those rows" in c.value]
    assert said and all("linked to the original" in c for c in said)
