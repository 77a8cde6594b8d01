"""A profile's page in Chromium (issue 23.7): every column of the overview chart labelled, the
per-column view opened on the column that tells most, and a chart that shows part of the columns says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from browsers import base_env, settle, shot, streamlit_app
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
#: A chart's axis labels (Streamlit draws Vega charts as SVG): the column axis is the one named "column".
AXIS_LABELS = """chart => [...chart.querySelectorAll("g.role-axis")]
    .map(axis => [axis.getAttribute("aria-label") || "",
                  [...axis.querySelectorAll("g.role-axis-label text")]
                    .filter(t => getComputedStyle(t).opacity !== "0" && t.getAttribute("opacity") !== "0")
                    .map(t => t.textContent)])"""


def customers_with_one_gap(columns: int) -> bytes:
    header = ["customer_id", *(f"field_{i:02d}" for i in range(2, columns)), "phone"]
    rows = [[f"C{r:05d}", *(f"v{r % 4}" for _ in range(2, columns)), "" if r % 5 == 0 else "555"] for r in range(200)]
    return csv_bytes([header, *rows])


def overview_labels(page) -> list[str]:
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.scroll_into_view_if_needed()
    return next(texts for name, texts in chart.evaluate(AXIS_LABELS) if name.startswith("Y-axis"))


def test_the_overview_labels_every_column_and_the_view_opens_on_the_gap(browser, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    nine = service.submit_file(LOCAL, "Customers profile", "profile", None, customers_with_one_gap(9)).task_id
    wide = service.submit_file(LOCAL, "Wide profile", "profile", None, customers_with_one_gap(450)).task_id
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    try:
        with streamlit_app(base_env(S3TASK_STORE=str(store)), tmp_path / "streamlit.log") as url:
            records = lambda: [read_record(LocalStore(store), Layout(), t)[0] for t in (nine, wide)]  # noqa: E731
            wait_for(lambda: all(r.status == "completed" for r in records()), 90, what="profiles done")
            page.goto(f"{url}/task?id={nine}")
            settle(page)
            expect(page.locator("[data-testid='stVegaLiteChart']").first).to_be_visible(timeout=20_000)
            labels = overview_labels(page)
            shot(page, "profile-overview-9-columns")
            # Every column has its label (the 9-column customer file had every other one only).
            assert labels == ["customer_id", *(f"field_{i:02d}" for i in range(2, 9)), "phone"]
            # The per-column view opens on the column with empty cells, not on the id.
            picker = page.locator("[data-testid='stSelectbox']").filter(has_text="Column")
            expect(picker.locator("input")).to_have_value("9. phone")
            expect(page.get_by_text("160 filled · 40 empty · 1 different value")).to_be_visible()
            picker.scroll_into_view_if_needed()
            shot(page, "profile-column-view-9-columns")

            page.goto(f"{url}/task?id={wide}")
            settle(page)
            expect(page.locator("[data-testid='stVegaLiteChart']").first).to_be_visible(timeout=20_000)
            said = page.get_by_text("The chart shows columns 1–200 of the 450 (pick other columns above).")
            expect(said).to_be_visible()
            labels = overview_labels(page)
            shot(page, "profile-overview-450-columns")
            assert labels == ["customer_id", *(f"field_{i:02d}" for i in range(2, 201))]
    finally:
        page.close()
