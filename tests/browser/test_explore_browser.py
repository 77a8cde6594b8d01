"""Searching a whole result in a real browser (issue 23 item 4): the customer in row 15,000 of 20,000 is
found from the completed task's page, with the count of matches, and the view downloads as a file.

Serves ``streamlit run app.py`` on a local store with the embedded worker, which runs the issue's
customer list (every 7th note a quoted line break) as a plain copy; Chromium types in the search box.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from browsers import base_env, grid_cells, settle, shot, streamlit_app
from conftest import CHROMIUM, wait_for
from customers import customers

from s3task.csvio import BOM
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py"),
]

LOCAL = Actor("local", operator=True)  # the app's development user


def test_a_search_finds_a_customer_deep_in_the_file_and_the_view_downloads(browser, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    task_id = service.submit_file(LOCAL, "Customers", "copy", None, customers(20_000)).task_id
    page = browser.new_page(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    with streamlit_app(base_env(S3TASK_STORE=str(store)), tmp_path / "streamlit.log") as url:
        done = lambda: read_record(LocalStore(store), Layout(), task_id)[0].status == "completed"  # noqa: E731
        wait_for(done, 60, what="the task done by the embedded worker")
        page.goto(f"{url}/task?id={task_id}")
        settle(page)
        search = page.get_by_role("textbox", name="Search every row")
        expect(search).to_be_visible(timeout=20_000)
        note = "act on every row of the result (20,000 rows), not only on the rows shown"
        expect(page.get_by_text(note)).to_be_visible()
        assert "C15000" not in grid_cells(page, 0)  # the preview holds the first 100 rows only

        search.fill("c15000@")
        search.press("Enter")
        expect(page.get_by_text("1 matching row of 20,000")).to_be_visible(timeout=20_000)
        settle(page)
        grid = page.locator("[data-testid='stDataFrame']").first
        expect(grid.locator("td").first).to_have_text("C15000", timeout=10_000)
        cells = grid_cells(page, 0)
        assert cells[:3] == ["C15000", "Name 15000", "c15000@example.com"]
        page.set_viewport_size({"width": 1366, "height": 1500})  # the controls, the count and the grid in one shot
        shot(page, "explore-1-search-every-row")

        search.fill("invoice")
        search.press("Enter")
        expect(page.get_by_text(f"{20_000 // 7:,} matching rows of 20,000")).to_be_visible(timeout=20_000)
        settle(page)
        with page.expect_download(timeout=30_000) as got:
            page.get_by_role("button", name="Download this view (CSV)").click()
        saved = tmp_path / got.value.suggested_filename
        got.value.save_as(saved)
        data = saved.read_bytes()
        assert data.startswith(BOM)
        rows = list(csv.DictReader(io.StringIO(data[len(BOM) :].decode("utf-8"), newline="")))
        assert len(rows) == 20_000 // 7 and rows[-1]["notes"] == "Called twice\nasked for invoice 19999"
