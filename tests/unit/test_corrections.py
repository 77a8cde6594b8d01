"""Corrected rows sent back: the errors workbook fixed as staff fix it (openpyxl, not our writer) and uploaded
on the original task makes a new task, linked both ways, that processes only those rows with the
original's type and settings; a race between two corrections, and a death between the two writes."""

from __future__ import annotations

import csv
import io
import threading
from datetime import datetime
from pathlib import Path

import openpyxl
import pytest
from support import csv_bytes
from worked import work, worked

from s3task.errors import InvalidInput, S3TaskError
from s3task.exports.errorbook import ROW_COLUMN
from s3task.layout import Layout
from s3task.record import TaskRecord
from s3task.records import read_record
from s3task.states import Status
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ADA = Actor("ada")
#: Excel rows: 1 header, 2 ok, 3 bad, 4 ok, 5 bad (a value over two lines above it does not move it: row 4).
ROWS = [
    ["name", "mail", "note"],
    ["Ada", "ada@example.com", ""],
    ["Bob", "bob at example.com", "call first"],
    ["Cy", "cy@example.com", "two\nlines"],
    ["Dee", "dee@", "=SUM(A1)"],
]


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


@pytest.fixture
def original(service: TaskService) -> TaskRecord:
    record = worked(service, ADA, csv_bytes(ROWS))
    assert record.error_count == 2
    return record


def errors_book(service: TaskService, task_id: str) -> openpyxl.Workbook:
    service.ensure_output(ADA, task_id, "errors-xlsx")
    with service.open_output(ADA, task_id, "errors-xlsx") as f:
        return openpyxl.load_workbook(io.BytesIO(f.read()))


def corrected(service: TaskService, task_id: str, fixes: dict[str, str]) -> bytes:
    """The errors workbook with each wrong address replaced as ``fixes`` says, saved by openpyxl."""
    book = errors_book(service, task_id)
    sheet = book.active
    for row in sheet.iter_rows(min_row=2):
        row[3].value = fixes.get(row[3].value, row[3].value)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def stored(service: TaskService, task_id: str) -> TaskRecord:
    """The record as stored now (another app replica's write included)."""
    return read_record(service.store, service.layout, task_id)[0]


def stored_text(service: TaskService, key: str) -> str:
    return service.store.get(key).body.decode("utf-8-sig")


def test_the_corrected_rows_make_a_linked_task_of_only_those_rows(service: TaskService, original: TaskRecord) -> None:
    fixes = {"bob at example.com": "bob@example.com", "dee@": "dee@example.com"}
    made = service.submit_correction(ADA, original.task_id, corrected(service, original.task_id, fixes))
    assert made.status == Status.QUEUED and made.corrects == original.task_id
    assert (made.task_type, made.payload) == (original.task_type, original.payload)  # its type and settings
    assert made.task_name == "March list (correction 1)"
    assert stored(service, original.task_id).corrections == [made.task_id]
    # Its input: the original's columns only (the error and row columns dropped), those rows, as corrected.
    rows = list(csv.reader(io.StringIO(stored_text(service, made.input_object_path), newline="")))
    assert rows == [ROWS[0], ["Bob", "bob@example.com", "call first"], ["Dee", "dee@example.com", "=SUM(A1)"]]
    assert stored_text(service, service.layout.corrected_rows_key(made.task_id)).split() == [
        "row",
        "in",
        "file",
        "3",
        "5",
    ]
    done = work(service, made.task_id)
    assert (done.row_count, done.error_count) == (2, 0)
    assert [r.task_id for r in service.corrections_of(ADA, original.task_id)] == [made.task_id]


def test_a_csv_saved_without_the_error_column_is_taken(service: TaskService, original: TaskRecord) -> None:
    sheet = errors_book(service, original.task_id).active
    values = [[c if c is not None else "" for c in row[1:]] for row in sheet.iter_rows(values_only=True)]
    values[1][2] = "bob@example.com"
    data = ("\ufeff" + "".join(";".join(v) + "\r\n" for v in values)).encode()  # Excel's "CSV UTF-8", semicolons
    made = service.submit_correction(ADA, original.task_id, data)
    rows = list(csv.reader(io.StringIO(stored_text(service, made.input_object_path), newline="")))
    assert rows[1:] == [["Bob", "bob@example.com", "call first"], ["Dee", "dee@", "=SUM(A1)"]]


def test_files_that_are_not_the_errors_file_are_refused_naming_the_row(
    service: TaskService, original: TaskRecord
) -> None:
    task_id = original.task_id
    book = errors_book(service, task_id)
    good = [list(row) for row in book.active.iter_rows(values_only=True)]

    def saved(rows: list[list[object]]) -> bytes:
        book = openpyxl.Workbook()
        for row in rows:
            book.active.append(row)
        out = io.BytesIO()
        book.save(out)
        return out.getvalue()

    with pytest.raises(InvalidInput, match="columns are not those of the rows with errors"):
        service.submit_correction(ADA, task_id, saved([[c for c in row if c != "note"][:4] for row in good]))
    with pytest.raises(InvalidInput, match=f"row 2 of the file: {ROW_COLUMN} 4 is not one of the rows with errors"):
        service.submit_correction(ADA, task_id, saved([good[0], [good[1][0], "4", *good[1][2:]]]))
    with pytest.raises(InvalidInput, match=f"row 3 of the file: {ROW_COLUMN} 3 is there twice"):
        service.submit_correction(ADA, task_id, saved([good[0], good[1], good[1]]))
    assert stored(service, task_id).corrections == []  # nothing refused was linked or made


def test_two_corrections_at_once_are_both_listed(service: TaskService, original: TaskRecord) -> None:
    data = corrected(service, original.task_id, {"dee@": "dee@example.com"})
    others = [TaskService(service.store, service.layout) for _ in range(4)]  # four app replicas
    barrier = threading.Barrier(len(others))
    made: list[str] = []

    def send(one: TaskService) -> None:
        barrier.wait()
        made.append(one.submit_correction(ADA, original.task_id, data).task_id)

    threads = [threading.Thread(target=send, args=(one,)) for one in others]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(made) == 4
    assert sorted(stored(service, original.task_id).corrections) == sorted(made)
    assert all(service.get(ADA, t).corrects == original.task_id for t in made)


def test_a_death_between_the_link_and_the_create_leaves_no_correction_behind(
    service: TaskService, original: TaskRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = corrected(service, original.task_id, {"dee@": "dee@example.com"})

    def dies(*_args: object, **_kwargs: object) -> None:
        raise SystemExit("killed")  # what a process killed between the two writes leaves

    with monkeypatch.context() as patch:
        patch.setattr(service._transitions, "store_new", dies)  # the create's write, after its checks
        with pytest.raises(SystemExit):
            service.submit_correction(ADA, original.task_id, data)
    listed = stored(service, original.task_id)
    assert len(listed.corrections) == 1  # the original lists the id it was about to make...
    assert service.corrections_of(ADA, original.task_id) == []  # ...which is no task, and shown as none
    again = service.submit_correction(ADA, original.task_id, data)  # and the upload can be sent again
    assert [r.task_id for r in service.corrections_of(ADA, original.task_id)] == [again.task_id]


def test_a_failure_after_the_create_cancels_the_new_task(
    service: TaskService, original: TaskRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = corrected(service, original.task_id, {"dee@": "dee@example.com"})

    def fails(*_args: object, **_kwargs: object) -> None:
        raise S3TaskError("the store is down")

    monkeypatch.setattr(service._inputs, "upload_input", fails)
    with pytest.raises(S3TaskError, match="the store is down"):
        service.submit_correction(ADA, original.task_id, data)
    (listed,) = service.corrections_of(ADA, original.task_id)
    assert listed.status == Status.ABANDONED and listed.corrects == original.task_id


def test_only_a_completed_task_with_errors_can_be_corrected(service: TaskService) -> None:
    task_id = service.create(ADA, "Clean list", "email_enrichment").record.task_id
    service.upload_input(ADA, task_id, csv_bytes([["mail"], ["a@example.com"]]))
    service.submit(ADA, task_id)
    with pytest.raises(S3TaskError, match="only a completed task with rows with errors"):
        service.submit_correction(ADA, task_id, b"")
    work(service, task_id)
    with pytest.raises(S3TaskError, match="only a completed task with rows with errors"):
        service.submit_correction(ADA, task_id, b"")
    with pytest.raises(S3TaskError, match="belongs to ada"):
        service.submit_correction(Actor("bob"), task_id, b"")


def test_listing_a_correction_twice_writes_nothing(original: TaskRecord) -> None:
    from s3task import lifecycle

    listed = lifecycle.note_correction(original, original_now(original), correction_id="7" + "0" * 25)
    assert listed is not None and listed.corrections == ["7" + "0" * 25] and listed.status == Status.COMPLETED
    assert lifecycle.note_correction(listed, original_now(original), correction_id="7" + "0" * 25) is None


def original_now(record: TaskRecord) -> datetime:
    from s3task.record import parse_iso

    return parse_iso(record.updated_at)


def test_the_apis_task_carries_the_links(service: TaskService, original: TaskRecord) -> None:
    import requests
    from apps.http_server import serve

    from s3task.config import Settings
    from s3task.web.api import create_app
    from s3task.web.tokens import TokenTable, hash_token

    root = str(service.store.root)  # type: ignore[attr-defined]
    app = create_app(Settings.load({"store": root}, {}), tokens=TokenTable({hash_token("t"): ADA}))
    with serve(app) as base:
        auth = {"Authorization": "Bearer t"}
        seen = requests.get(f"{base}/api/tasks/{original.task_id}", headers=auth, timeout=30).json()["task"]
        assert seen["corrections"] == []  # read (and kept) by the API's process before the correction
        made = service.submit_correction(ADA, original.task_id, corrected(service, original.task_id, {}))
        got = requests.get(f"{base}/api/tasks/{original.task_id}", headers=auth, timeout=30).json()["task"]
        assert (got["corrects"], got["corrections"]) == (None, [made.task_id])
        got = requests.get(f"{base}/api/tasks/{made.task_id}", headers=auth, timeout=30).json()["task"]
        assert (got["corrects"], got["corrections"]) == (original.task_id, [])
