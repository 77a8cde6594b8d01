"""A task refused for its file, in Chromium, on a 1366-px screen and a phone: the message names the row
as Excel numbers it, and no button label is clipped (issue 23.5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from browsers import base_env, settle, shot, streamlit_app
from conftest import CHROMIUM, wait_for
from customers import customers

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py"),
]

LOCAL = Actor("local", operator=True)  # the app's development user
CLIPPED = """els => els.filter(e => e.scrollWidth > e.clientWidth || e.getBoundingClientRect().right > innerWidth)
                   .map(e => e.innerText)"""


def test_the_refused_file_s_page_names_the_row_and_shows_whole_buttons(browser, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    task_id = service.submit_file(LOCAL, "Customers", "copy", None, customers(stray_line=5_000)).task_id
    env = base_env(S3TASK_STORE=str(store))
    with streamlit_app(env, tmp_path / "streamlit.log") as url:
        wait_for(lambda: read_record(LocalStore(store), Layout(), task_id)[0].status == "failed", 60, what="failed")
        for name, viewport in (("1366", {"width": 1366, "height": 900}), ("phone", {"width": 390, "height": 844})):
            page = browser.new_page(viewport=viewport)
            try:
                page.goto(f"{url}/task?id={task_id}")
                settle(page)
                expect(page.get_by_text("row 4,376 (customer_id C04375; line 5,000 in a text editor)")).to_be_visible()
                start = page.get_by_role("link", name="Start again with a corrected file")
                start.scroll_into_view_if_needed()
                expect(start).to_be_visible()
                shot(page, f"failed-task-{name}")
                labels = page.locator("[data-testid='stPageLink'] p, [data-testid='stBaseButton-secondary'] p")
                assert labels.count() >= 2  # the link and "Run the same file again" (an operator's)
                assert labels.evaluate_all(CLIPPED) == [], name
            finally:
                page.close()
