"""Workbooks on the New task page: its logic (ui/task_form.py, ui/workbookfile.py) and the page through AppTest.

In both upload modes — Streamlit's uploader (the whole file reaches the app) and the direct upload (the
browser sends the ranges a preview needs: tests/workbooks.py ``browser_ranges``, as ui/direct_upload.js
picks them) — the page lists the sheets with their rows (the one it opens on chosen), says which row
the header was taken from and lets it be changed, shows the first rows as the worker reads them, and the
task carries the sheet and header row shown. The Chromium test (tests/browser/test_workbook_browser.py)
does it with the real JavaScript and a real worker.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import app_pages
import pytest
from app_pages import goto, texts
from workbooks import (
    HEADER,
    OPENPYXL_SHOWN,
    PRICES,
    SHOWN,
    browser_ranges,
    openpyxl_book,
    with_pictures,
    xlsxwriter_book,
)

from s3task.csvio import InputFormat
from s3task.csvio.workbook import Sheet
from s3task.tasks import Actor, TaskService
from ui.csvfile import inspect_upload
from ui.task_form import FormKeys, chosen_format, remembered
from ui.workbookfile import DATES, header_line, is_workbook, sheet_label

app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir
KEYS = FormKeys(2)
BOOK = InputFormat(kind="xlsx", sheet="Customers", header_row=3)


# --- the logic --------------------------------------------------------------------------------------------


def test_the_format_chosen_is_a_csvs_or_a_workbooks_else_the_prefilled_one() -> None:
    delimiter, encoding = KEYS.format("f")
    assert chosen_format({delimiter: ";", encoding: "utf-8"}, KEYS, "f", BOOK) == InputFormat(";")
    assert chosen_format({KEYS.sheet("f"): "Prices"}, KEYS, "f", BOOK) == InputFormat(kind="xlsx", sheet="Prices")
    with_header = {KEYS.sheet("f"): "Prices", KEYS.header("f", "Prices"): 2, KEYS.header("f", "Customers"): 3}
    assert chosen_format(with_header, KEYS, "f", None) == InputFormat(kind="xlsx", sheet="Prices", header_row=2)
    assert chosen_format({KEYS.sheet("other file"): "Prices"}, KEYS, "f", BOOK) == BOOK  # not this file's choice
    assert chosen_format({}, KEYS, "f", None) is None  # what the file shows


def test_an_inspection_is_made_again_only_when_what_it_depends_on_changes() -> None:
    store: dict[str, object] = {}
    made: list[int] = []

    def make() -> int:
        made.append(1)
        return len(made)

    assert [remembered(store, "k", ("f", BOOK), make) for _ in range(3)] == [1, 1, 1]
    assert remembered(store, "k", ("f", InputFormat(kind="xlsx", sheet="Prices")), make) == 2


def test_a_sheet_is_named_with_its_rows_and_the_header_line_says_what_is_skipped() -> None:
    assert sheet_label(Sheet("Customers", True, 5, "")) == "Customers · 5 rows"
    assert sheet_label(Sheet("Lookup", False, 1, "")) == "Lookup (hidden) · 1 row"
    assert sheet_label(Sheet("Big", True, None, "")) == "Big · rows: counted when the task runs"
    assert header_line(3) == "Header taken from row 3 — the rows above it are skipped"
    assert header_line(1_200) == "Header taken from row 1,200 — the rows above it are skipped"
    assert header_line(1) == "Header taken from row 1"


def test_a_zip_is_a_workbook_by_its_bytes_and_an_ole2_file_by_its_name_too() -> None:
    assert is_workbook("export.csv", b"PK\x03\x04rest") and is_workbook("book.xlsx", b"PK\x03\x04")
    assert is_workbook("locked.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1") and is_workbook(
        "old.XLS", b"\xd0\xcf\x11\xe0"
    )
    assert not is_workbook("letter.csv", b"\xd0\xcf\x11\xe0") and not is_workbook("book.xlsx", b"id,name\n")


@pytest.mark.parametrize(
    ("build", "sheet", "shown"), [(xlsxwriter_book, "Customers", SHOWN), (openpyxl_book, "Data", OPENPYXL_SHOWN)]
)
def test_a_workbook_previews_the_sheet_it_opens_on_under_its_title(tmp_path: Path, build, sheet, shown) -> None:
    data = build(tmp_path / "book.xlsx").read_bytes()
    found = inspect_upload("book.xlsx", len(data), io.BytesIO(data))
    assert found.ok and found.is_workbook, found.problem
    assert [(s.name, s.rows) for s in found.sheets] == [(sheet, 5), ("Prices", 3)]
    assert found.input_format == InputFormat(kind="xlsx", sheet=sheet, header_row=3)
    assert found.columns == HEADER and found.preview.values.tolist() == shown
    other = inspect_upload(
        "book.xlsx", len(data), io.BytesIO(data), input_format=InputFormat(kind="xlsx", sheet="Prices")
    )
    assert other.input_format == InputFormat(kind="xlsx", sheet="Prices", header_row=1)
    assert [other.columns, *other.preview.values.tolist()] == PRICES


def test_a_prefilled_sheet_the_new_workbook_lacks_gives_the_sheet_it_opens_on(tmp_path: Path) -> None:
    data = xlsxwriter_book(tmp_path / "book.xlsx").read_bytes()
    asked = InputFormat(kind="xlsx", sheet="Orders", header_row=7)
    found = inspect_upload("book.xlsx", len(data), io.BytesIO(data), input_format=asked)
    assert found.ok and found.input_format == BOOK
    assert found.note == "This workbook has no sheet 'Orders', so the sheet it opens on is shown."
    csv = inspect_upload("people.csv", 8, io.BytesIO(b"a,b\n1,2\n"), input_format=BOOK)  # a workbook's: not a CSV's
    assert csv.ok and csv.input_format == InputFormat() and csv.columns == ["a", "b"]


# --- the page (AppTest) -----------------------------------------------------------------------------------


def sheet_box(at):
    return next(s for s in at.selectbox if s.label == "Sheet")


def header_box(at):
    return next(n for n in at.number_input if n.label == "Header row")


def submit(at) -> None:
    next(b for b in at.button if b.label == "Submit").click().run()


def assert_shows_the_export(at, sheet: str) -> None:
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert sheet_box(at).value == sheet and sheet_box(at).options == [f"{sheet} · 5 rows", "Prices · 3 rows"]
    assert header_box(at).value == 3
    assert "Header taken from row 3 — the rows above it are skipped" in texts(at)
    assert at.dataframe[0].value.values.tolist() == SHOWN and list(at.dataframe[0].value.columns) == HEADER
    assert DATES in texts(at)


def test_through_the_uploader_the_sheet_and_header_chosen_are_the_tasks(
    app, monkeypatch, tmp_path: Path, service
) -> None:
    monkeypatch.setenv("S3TASK_DIRECT_UPLOAD", "0")
    data = xlsxwriter_book(tmp_path / "March export.xlsx").read_bytes()
    at = goto(app("ann"), "pages/new_task.py")
    at.file_uploader[0].set_value(("March export.xlsx", data, "application/octet-stream")).run()
    assert_shows_the_export(at, "Customers")
    assert at.text_input[0].value == "March export"
    header_box(at).set_value(4).run()  # the first data row as the header: its values become the names
    assert "Header taken from row 4" in texts(at) and list(at.dataframe[0].value.columns) == SHOWN[0]
    sheet_box(at).set_value("Prices").run()  # another sheet: its own header, found afresh
    assert header_box(at).value == 1 and "Header taken from row 1" in texts(at)
    assert at.dataframe[0].value.values.tolist() == PRICES[1:]
    submit(at)
    record = service.get(Actor("ann"), at.query_params["id"])
    assert record.status == "queued" and record.input_format == InputFormat(kind="xlsx", sheet="Prices", header_row=1)


def test_through_the_uploader_a_bad_workbook_is_refused_before_anything_is_made(app, monkeypatch, tmp_path, service):
    from workbooks import bad_workbooks

    monkeypatch.setenv("S3TASK_DIRECT_UPLOAD", "0")
    for name, (data, words) in bad_workbooks(tmp_path).items():
        at = goto(app("ann"), "pages/new_task.py")
        at.text_input[0].input(name)
        at.file_uploader[0].set_value((f"{name}.xlsx", data, "application/octet-stream")).run()
        assert at.error and words.lower() in texts(at).lower(), name  # the reader's sentence (a capital: .lower())
        assert next(b for b in at.button if b.label == "Submit").disabled and not at.dataframe
    assert service.list(Actor("boss", operator=True)).tasks == []


def test_the_direct_upload_previews_from_the_ranges_sent_and_the_task_reads_that_sheet(
    app, tmp_path: Path, service: TaskService
) -> None:
    data = with_pictures(xlsxwriter_book(tmp_path / "book.xlsx").read_bytes())
    ranges = browser_ranges(data)
    at = goto(app(), "pages/new_task.py")
    sent = {
        "id": "f1",
        "name": "March export.xlsx",
        "size": len(data),
        "head": base64.b64encode(data[: 64 * 1024]).decode(),
        "ranges": [[at_, base64.b64encode(part).decode()] for at_, part in ranges],
    }
    at.session_state["upload_0"] = {**dict(at.session_state["upload_0"]), "file": sent}
    at.run()
    assert_shows_the_export(at, "Customers")
    sheet_box(at).set_value("Prices").run()
    assert at.dataframe[0].value.values.tolist() == PRICES[1:]
    at.text_input[0].input("March").run()
    submit(at)
    plan = json.loads(at.get("bidi_component")[0].proto.json)["upload"]
    service.upload_input(Actor("local", operator=True), plan["id"], data)  # what the browser's PUT does
    at.session_state["upload_0"] = {**dict(at.session_state["upload_0"]), "uploaded": {"id": plan["id"]}}
    at.run()
    record = service.get(Actor("local"), plan["id"])
    assert not at.exception and record.status == "queued"
    assert record.input_format == InputFormat(kind="xlsx", sheet="Prices", header_row=1)  # checked on the whole file


def test_what_the_browser_reports_keeps_a_csvs_shape_and_adds_a_workbooks_ranges() -> None:
    from ui.direct import Chosen

    csv = Chosen.from_state({"id": "f", "name": "a.csv", "size": 4, "head": base64.b64encode(b"a\n1\n").decode()})
    assert csv == Chosen("f", "a.csv", 4, b"a\n1\n") and csv.ranges == ()
    book = Chosen.from_state(
        {
            "id": "g",
            "name": "b.xlsx",
            "size": 100,
            "head": "UEsDBA==",
            "ranges": [[90, base64.b64encode(b"end").decode()]],
        }
    )
    assert book is not None and book.ranges == ((90, b"end"),)
    file = book.sparse()
    assert (file.read(), file.seek(90), file.read()) == (b"PK\x03\x04", 90, b"end")
    assert Chosen.from_state({"id": "g", "name": "b.xlsx", "size": 1, "head": "", "ranges": [["x", "y"]]}) is None


def test_a_form_filled_in_from_a_workbook_task_starts_on_its_sheet_and_header_row(
    app, monkeypatch, tmp_path: Path, service: TaskService
) -> None:
    monkeypatch.setenv("S3TASK_DIRECT_UPLOAD", "0")
    data = xlsxwriter_book(tmp_path / "book.xlsx").read_bytes()
    task_id = service.submit_file(
        Actor("ann"), "March", "copy", None, data, {"sheet": "Prices", "header_row": 2}
    ).task_id
    at = app("ann")
    at.query_params["from"] = task_id
    at = goto(at, "pages/new_task.py")
    at.file_uploader[0].set_value(("April.xlsx", data, "application/octet-stream")).run()
    assert not at.exception and not at.error
    assert (sheet_box(at).value, header_box(at).value) == ("Prices", 2)  # as the task read it
    assert at.dataframe[0].value.values.tolist() == PRICES[2:] and list(at.dataframe[0].value.columns) == PRICES[1]
