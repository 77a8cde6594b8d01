""" "Compare with another result" in a real browser (issue 34 part 1): on a completed result's page the other
result and the key column are offered, Compare queues a comparison that the app's embedded worker runs as a
task of its own, and its page says what changed (counts, each column) above the highlighter's first rows; on a
desktop and at 390x844. ``UPDATE_DOC_SHOTS=1`` copies the desktop shot to docs/images/.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from browsers import ARTIFACTS, base_env, grid_cells, open_section, settle, shot, streamlit_app
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
ROOT = Path(__file__).resolve().parent.parent.parent
MARCH = [["id", "name", "price"], *([str(i), f"name {i}", f"{i}.0"] for i in range(1, 41))]
APRIL = [["id", "name", "price"], *([str(i), f"name {i}", str(i + (i % 7 == 0))] for i in range(3, 45))]


def said(page, text: str):
    """The element that says ``text`` (the page puts an invisible word joiner after a colon it escapes)."""
    return page.get_by_text(re.compile(re.escape(text).replace(":", ":\u2060?")))


def test_a_comparison_is_asked_for_on_a_result_and_its_answer_shown(browser, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    march = service.submit_file(LOCAL, "March", "copy", None, csv_bytes(MARCH)).task_id
    april = service.submit_file(LOCAL, "April", "copy", None, csv_bytes(APRIL)).task_id

    def status(task_id: str) -> str:
        return read_record(LocalStore(store), Layout(), task_id)[0].status.value

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    with streamlit_app(base_env(S3TASK_STORE=str(store)), tmp_path / "streamlit.log") as url:
        wait_for(lambda: {status(march), status(april)} == {"completed"}, 60, what="both lists done by the worker")
        page.goto(f"{url}/task?id={april}")
        settle(page)
        other = "The other result (the older one)"
        box = open_section(page, "Compare with another result", lambda s: s.get_by_role("combobox", name=other))
        expect(page.get_by_text("Filled and unique in both results: id, name")).to_be_visible(timeout=20_000)
        settle(page)
        box.scroll_into_view_if_needed()
        shot(page, "compare-1-offer")
        page.get_by_role("button", name="Compare").click()
        made = wait_for(
            lambda: next((r for r in service.list(LOCAL).tasks if r.task_type == "compare"), None), 20, what="made"
        )
        page.wait_for_url(f"**/task?id={made.task_id}", timeout=20_000)  # its own page opens
        settle(page)
        expect(page.get_by_role("heading", name="What changed")).to_be_visible(timeout=60_000)
        words = "compared by id: 4 rows added, 2 rows removed, 5 rows changed, 33 rows unchanged"
        expect(said(page, words)).to_be_visible(timeout=10_000)
        expect(said(page, "price changed in 5 rows")).to_be_visible()
        settle(page)
        changes = page.locator("[data-testid='stDataFrame']").nth(1)  # the per-column table, then the changes
        changes.scroll_into_view_if_needed()
        cells = wait_for(lambda: grid_cells(page, 1), 20, what="the changes' cells drawn")
        assert "7.0->8" in cells and "+++" in cells and "---" in cells, cells
        page.get_by_role("heading", name="What changed").scroll_into_view_if_needed()
        shot(page, "compare-2-answer")
        compare_url = page.url

        phone = browser.new_page(viewport={"width": 390, "height": 844})
        phone.goto(compare_url)
        settle(phone)
        expect(said(phone, words)).to_be_visible(timeout=30_000)
        metric = phone.locator("[data-testid='stMetric']").last
        box_ = metric.bounding_box()
        assert box_ is not None and box_["x"] + box_["width"] <= 390  # the counts fit the phone's width
        settle(phone)
        phone.get_by_role("heading", name="What changed").scroll_into_view_if_needed()
        shot(phone, "compare-3-phone")
        phone.close()
    if os.environ.get("UPDATE_DOC_SHOTS"):
        shutil.copy(ARTIFACTS / "compare-2-answer.png", ROOT / "docs" / "images" / "compare-answer.png")
