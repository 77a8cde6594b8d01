"""A completed task's result in a real browser: the downloads first, values as they are, Excel, phones.

Serves ``streamlit run app.py`` on a local store with the embedded worker (as
``tests/browser/test_browser.py`` does) and seeds two tasks through the task service as the
app's development user: an email check with row errors and values a spreadsheet
would run, and a plain copy without errors. Chromium then looks at their pages,
on a desktop and on a phone-sized viewport.
"""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pytest
from browsers import base_env, grid_cells, settle, shot, streamlit_app
from conftest import CHROMIUM, wait_for
from support import csv_bytes

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py"),
]

LOCAL = Actor("local", operator=True)  # the app's development user
PHONE = "+44 20 7946 0958"
PEOPLE = [
    ["name", "phone", "email"],
    ["Tomás", PHONE, "tomas@example.com"],
    ["Ann", "-10% discount", "not an address"],
    ["Bob", "007", "bob@example.org"],
    ["Cy", "=1+1", "cy@"],
]


def seed(store: Path, name: str, task_type: str, rows: list[list[str]]) -> str:
    service = TaskService(LocalStore(store), Layout())
    task_id = service.create(LOCAL, name, task_type).record.task_id
    service.upload_input(LOCAL, task_id, csv_bytes(rows))
    service.submit(LOCAL, task_id)
    return task_id


def completed(store: Path, task_id: str) -> bool:
    return read_record(LocalStore(store), Layout(), task_id)[0].status == "completed"


def open_task(page, url: str, task_id: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{url}/task?id={task_id}")
    settle(page)
    expect(page.get_by_role("heading", name="Result")).to_be_visible(timeout=20_000)
    expect(page.locator("[data-testid='stDataFrame']").first.locator("td").first).to_be_attached()


def top(locator) -> float:
    box = locator.bounding_box()
    assert box is not None
    return box["y"]


def test_the_result_comes_first_as_it_is(browser, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "store"
    checked = seed(store, "Customer emails", "email_enrichment", PEOPLE)
    copied = seed(store, "Plain copy", "copy", [["a", "b"], ["1", "@home"]])
    timeout = 60  # the embedded worker polls every 0.3 s; these take well under a second each
    env = base_env(S3TASK_STORE=str(store))
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    try:
        with streamlit_app(env, tmp_path / "streamlit.log") as url:
            wait_for(lambda: completed(store, checked) and completed(store, copied), timeout, what="both tasks done")

            open_task(page, url, checked)
            download = page.get_by_role("button", name="Download result (CSV)")
            errors_download = page.get_by_role("button", name="Only the rows with errors (2)")
            timeline = page.get_by_role("heading", name="Timeline")
            assert top(download) < top(timeline) and top(errors_download) < top(timeline)
            assert top(download) < top(page.locator("[data-testid='stDataFrame']").first)  # above the rows too
            # The preview shows the values as they are; the note says why the CSV differs.
            cells = grid_cells(page, 0)
            assert PHONE in cells and "=1+1" in cells and "'" + PHONE not in cells
            note = "3 values have a ' in front, so that a spreadsheet shows them as text"  # +44…, -10%…, =1+1
            expect(page.get_by_text(note)).to_be_visible()
            # The grid's own toolbar offers no download of its 100 rows.
            page.locator("[data-testid='stDataFrame']").first.hover()
            expect(page.locator(".st-key-result_preview [data-testid='stElementToolbar']")).to_be_visible()
            preview = page.locator(".st-key-result_preview")
            expect(preview.get_by_role("button", name="Search")).to_be_visible()
            assert preview.get_by_role("button", name="Download as CSV").filter(visible=True).count() == 0
            shot(page, "result-1-completed-with-errors")

            # The Excel file: made on first request, then downloaded by itself.
            with page.expect_download(timeout=30_000) as excel:
                page.get_by_role("button", name="Excel file (.xlsx)").click()
            saved = tmp_path / excel.value.suggested_filename
            excel.value.save_as(saved)
            assert saved.suffix == ".xlsx"
            sheet = openpyxl.load_workbook(io.BytesIO(saved.read_bytes())).active
            assert [c.value for c in sheet[2]][:2] == ["Tomás", PHONE] and sheet["B5"].value == "=1+1"
            assert sheet["B5"].data_type == "s"

            # Errors only: the error first, readable without scrolling sideways.
            page.get_by_text("Only rows with errors (2)").click()
            settle(page)
            expect(page.locator("[data-testid='stDataFrame'] th").first).to_have_text("error", timeout=10_000)
            assert grid_cells(page, 0)[0].startswith("invalid email")

            # No errors, no errors option.
            open_task(page, url, copied)
            expect(page.get_by_role("button", name="Download result (CSV)")).to_be_visible()
            assert page.get_by_text("Only rows with errors").count() == 0
            assert page.get_by_text("Only the rows with errors").count() == 0
            assert grid_cells(page, 0) == ["1", "@home"]

            # A phone: the grid's toolbar does not cover the errors toggle.
            phone_context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
            phone = phone_context.new_page()
            try:
                open_task(phone, url, checked)
                phone.locator("[data-testid='stDataFrame']").first.tap()  # a tap shows the grid's toolbar
                expect(phone.locator(".st-key-result_preview [data-testid='stElementToolbar']")).to_be_visible()
                toolbar = phone.locator(".st-key-result_preview [data-testid='stElementToolbar']").bounding_box()
                toggle = phone.get_by_role("radiogroup", name="Show").bounding_box()
                assert toolbar and toggle
                assert toolbar["y"] >= toggle["y"] + toggle["height"] or toolbar["x"] >= toggle["x"] + toggle["width"]
                phone.get_by_text("Only rows with errors (2)").tap(timeout=5_000)  # no force: must be on top
                settle(phone)
                expect(phone.locator("[data-testid='stDataFrame'] th").first).to_have_text("error", timeout=10_000)
                shot(phone, "result-2-phone-errors-only")
            finally:
                phone_context.close()
    finally:
        page.close()
