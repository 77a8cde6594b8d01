"""A column's chart over every row in a real browser (issue 34 part 3): a completed result's page, *Chart a
column* picked, the Altair chart drawn with its counts in words beside it, on a desktop and a phone.

Serves ``streamlit run app.py`` on a local store with the embedded worker, which runs a 5,000-row list as a
plain copy; Chromium picks the columns. ``UPDATE_DOC_SHOTS=1`` copies the desktop shot to docs/images/.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from browsers import ARTIFACTS, base_env, choose, settle, shot, streamlit_app
from conftest import CHROMIUM, wait_for

from s3task import charts
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
CITIES = ["Amsterdam", "Zoëterwoude", "Zürich", "Lyon", "Rotterdam"]


def orders(n: int = 5_000) -> bytes:
    """Orders with a price (1 to 250, one in 50 empty), an order day over 88 days and a city."""
    rows = ["order,price,day,city"]
    for i in range(1, n + 1):
        price = "" if i % 50 == 0 else f"{(i * 37 % 500 + 1) / 2}"
        day = f"2024-{1 + i % 3:02d}-{1 + i % 28:02d}"
        rows.append(f"O{i:05d},{price},{day},{CITIES[min(4, i % 9 // 2)]}")
    return ("\n".join(rows) + "\n").encode()


def said(page, text: str):
    """The element that says ``text`` (the page puts an invisible word joiner after a colon it escapes)."""
    return page.get_by_text(re.compile(re.escape(text).replace(":", ":\u2060?")))


def test_a_picked_column_is_charted_with_its_counts_in_words(browser, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    task_id = service.submit_file(LOCAL, "Orders", "copy", None, orders()).task_id
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    with streamlit_app(base_env(S3TASK_STORE=str(store)), tmp_path / "streamlit.log") as url:
        done = lambda: read_record(LocalStore(store), Layout(), task_id)[0].status == "completed"  # noqa: E731
        wait_for(done, 60, what="the task done by the embedded worker")
        page.goto(f"{url}/task?id={task_id}")
        settle(page)
        expect(page.get_by_text("Pick a column to see how its values spread")).to_be_visible(timeout=20_000)

        choose(page, "Chart a column", "price")
        words = "price: 5,000 rows, 100 empty, from 1 to 250"
        expect(said(page, words)).to_be_visible(timeout=30_000)
        chart = page.locator("[data-testid='stVegaLiteChart']")
        expect(chart).to_be_visible(timeout=10_000)
        expect(chart.locator("svg, canvas").first).to_be_visible(timeout=10_000)
        expect(said(page, "Rows per range of 20: 0 to 20: 380;")).to_be_visible()
        settle(page)
        chart.scroll_into_view_if_needed()
        shot(page, "chart-1-price")

        choose(page, "Chart a column", "city")
        expect(said(page, "city: 5,000 rows, 0 empty, 5 different values")).to_be_visible(timeout=30_000)
        expect(said(page, "Most common values: “")).to_be_visible()
        settle(page)
        shot(page, "chart-2-city")

        choose(page, "Chart a column", "day")
        expect(said(page, "day: 5,000 rows, 0 empty, from 2024-01-01 to 2024-03-28")).to_be_visible(timeout=30_000)
        fold = page.get_by_text("The count of each of the 88 bars")  # 88 days: a bar a day, said in a fold
        expect(fold).to_be_visible()
        fold.click()
        expect(said(page, "Rows per day (4 of the 88 bars have no rows): 2024-01-01: 59;")).to_be_visible()
        settle(page)
        shot(page, "chart-3-day")

        record = service.get(LOCAL, task_id)
        for name in ("price", "city", "day"):  # each kept beside the result
            key = service.layout.chart_key(task_id, record.attempt_id, charts.digest(name))
            assert service.store.head(key).size > 0

        phone = browser.new_page(viewport={"width": 390, "height": 844})
        phone.goto(f"{url}/task?id={task_id}")
        settle(phone)
        choose(phone, "Chart a column", "price")
        expect(said(phone, words)).to_be_visible(timeout=30_000)  # the kept summary, read
        phone_chart = phone.locator("[data-testid='stVegaLiteChart']")
        expect(phone_chart).to_be_visible(timeout=10_000)
        box = phone_chart.bounding_box()
        assert box is not None and box["width"] <= 390  # the chart fits the phone's width
        settle(phone)
        phone_chart.scroll_into_view_if_needed()
        shot(phone, "chart-4-phone")
        phone.close()
    if os.environ.get("UPDATE_DOC_SHOTS"):
        shutil.copy(ARTIFACTS / "chart-1-price.png", ROOT / "docs" / "images" / "result-chart.png")
