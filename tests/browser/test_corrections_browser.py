"""The errors round trip as staff meet it in Chromium: the rows with errors downloaded as a workbook, fixed
(openpyxl, as Excel would save them), uploaded back on the task's page, run as a linked task by the
app's embedded worker, and the combined result downloaded and checked row for row against the task
over the original file with the fixes applied; then, from the correction's page, the same combined result
as an Excel workbook.

Takes the screenshot docs/APP.md shows into tests/artifacts/, and copies it there when UPDATE_DOC_SHOTS=1.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from pathlib import Path

import openpyxl
import pytest
from browsers import ARTIFACTS, base_env, open_section, settle, shot, streamlit_app
from conftest import CHROMIUM, wait_for
from support import csv_bytes

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.testing import run_task_type

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py"),
]

ROOT = Path(__file__).resolve().parents[2]
DOCS_SHOT = ROOT / "docs" / "images" / "corrections-round-trip.png"
LOCAL = Actor("local", operator=True)  # the app's development user
CUSTOMERS = [
    ["customer_id", "email", "notes"],
    ["C001", "ann@example.com", ""],
    ["C002", "bob at example.com", "called twice,\nno answer"],  # a line break inside the value: still one row
    ["C003", "cy@example.org", ""],
    ["C004", "dee@", "=VIP"],
    ["C005", "eve@example.net", ""],
]
FIXES = {"C002": "bob@example.com", "C004": "dee@example.com"}


def status(store: Path, task_id: str) -> str:
    return str(read_record(LocalStore(store), Layout(), task_id)[0].status)


def rows_of(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def test_errors_fixed_in_excel_come_back_as_one_combined_result(browser, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    task_id = service.create(LOCAL, "Customer list", "email_enrichment").record.task_id
    service.upload_input(LOCAL, task_id, csv_bytes(CUSTOMERS))
    service.submit(LOCAL, task_id)
    page = browser.new_page(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    try:
        with streamlit_app(base_env(S3TASK_STORE=str(store)), tmp_path / "streamlit.log") as url:
            wait_for(lambda: status(store, task_id) == "completed", 60, what="the task done")
            page.goto(f"{url}/task?id={task_id}")
            settle(page)

            # The rows with errors, as a workbook: the error, the row in the file, the cells as read.
            with page.expect_download(timeout=30_000) as got:
                page.get_by_role("button", name="Rows with errors (.xlsx, to correct)").click()
            errors_file = tmp_path / got.value.suggested_filename
            got.value.save_as(errors_file)
            book = openpyxl.load_workbook(errors_file)
            sheet = book.active
            assert [c.value for c in sheet[1]] == ["error", "row in file", *CUSTOMERS[0]]
            assert [(r[1], r[2]) for r in sheet.iter_rows(min_row=2, values_only=True)] == [
                ("3", "C002"),
                ("5", "C004"),
            ]
            for row in sheet.iter_rows(min_row=2):
                row[3].value = FIXES[row[2].value]  # fixed as staff fix them in Excel
            fixed = tmp_path / "Customer list - fixed.xlsx"
            book.save(fixed)

            # Uploaded back on the task's page: a new task, linked, runs only those rows.
            picker = page.locator("[data-testid='stFileUploader'] input[type='file']")
            open_section(page, "Upload the corrected rows", lambda s: s.locator("[data-testid='stFileUploader']"))
            picker.set_input_files(str(fixed))
            run = page.get_by_role("button", name="Run the corrected rows")
            expect(run).to_be_enabled(timeout=20_000)
            run.click()
            expect(page.get_by_role("link", name="Corrected from “Customer list”")).to_be_visible(timeout=30_000)
            correction = page.url.split("id=")[-1]
            assert read_record(LocalStore(store), Layout(), correction)[0].corrects == task_id
            wait_for(lambda: status(store, correction) == "completed", 60, what="the correction done")

            # Back on the original: the correction listed, and the combined result.
            page.goto(f"{url}/task?id={task_id}")
            settle(page)
            expect(page.get_by_text("2 rows run again · no rows with errors")).to_be_visible(timeout=20_000)
            shot(page, "corrections-round-trip")
            if os.environ.get("UPDATE_DOC_SHOTS") == "1":
                shutil.copyfile(ARTIFACTS / "corrections-round-trip.png", DOCS_SHOT)
            with page.expect_download(timeout=60_000) as got:
                page.get_by_role("button", name="Download the combined result (CSV)").click()
            combined = tmp_path / got.value.suggested_filename
            got.value.save_as(combined)
            assert combined.name.endswith("-combined.csv")

            # The correction's page offers its original's combined result too, as Excel.
            page.goto(f"{url}/task?id={correction}")
            settle(page)
            with page.expect_download(timeout=60_000) as got:
                page.get_by_role("button", name="Download the combined result (Excel)").click()
            workbook = tmp_path / got.value.suggested_filename
            got.value.save_as(workbook)
            assert workbook.name.startswith("Customer-list-") and workbook.name.endswith("-combined.xlsx")
    finally:
        page.close()
    applied = [[*row[:1], FIXES.get(row[0], row[1]), *row[2:]] for row in CUSTOMERS]
    assert rows_of(combined.read_bytes()) == rows_of(run_task_type("email_enrichment", csv_bytes(applied)).output)
    cells = [list(row) for row in openpyxl.load_workbook(workbook).active.iter_rows(values_only=True)]
    assert [row[:3] for row in cells] == [[c or None for c in row] for row in applied]  # "=VIP" as text
    assert all(row[-1] is None for row in cells[1:])  # every fix in place: no row with an error
