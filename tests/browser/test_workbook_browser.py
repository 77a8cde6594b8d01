"""Excel workbooks on the New task page, in Chromium, read by the app's own worker (issue 22, item 1).

A workbook written by xlsxwriter and one written by openpyxl (tests/workbooks.py: a title above the table,
the header in row 3, number formats, a formula, a merged range, a second sheet), each between two 1 MB
pictures so that its parts lie neither in the file's first 64 KB nor at its end: the direct upload's
JavaScript must read the zip's directory and send the parts' starts for there to be a preview at all. The
page lists the sheets with their rows and says the header row it took; the sheet is changed (and, for one,
changed back); Submit; the task's ``input_format`` is the sheet and header row shown, and the worker's
output is the rows the preview showed. Once through Streamlit's uploader too (the whole file through the app).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from browsers import ARTIFACTS, app_on, base_env, grid_cells, pick_file, settle, shot
from conftest import CHROMIUM, free_port, wait_for
from workbooks import HEADER, OPENPYXL_SHOWN, PRICES, SHOWN, openpyxl_book, with_pictures, xlsxwriter_book

ROOT = Path(__file__).resolve().parents[2]
#: The screenshot docs/APP.md shows: this test takes it into tests/artifacts/, and copies it there when
#: UPDATE_DOC_SHOTS=1 (so that a run does not change a committed file unasked).
DOCS_SHOT = ROOT / "docs" / "images" / "new-task-workbook.png"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; install Debian's Chromium"),
]


class Apps:
    """One local store, the app on it twice: the direct upload (the default) and Streamlit's uploader."""

    def __init__(self, root: Path, direct: str, fallback: str) -> None:
        self.root, self.direct, self.fallback = root, direct, fallback

    def record(self, task_id: str) -> dict:
        (path,) = self.root.glob(f"**/{task_id}/status.json")
        return json.loads(path.read_text())

    def output_rows(self, task_id: str) -> list[list[str]]:
        (path,) = self.root.glob(f"**/{task_id}/output-attempt-*.csv")
        return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apps]:
    tmp = tmp_path_factory.mktemp("workbook-page")
    store = tmp / "store"
    with ExitStack() as stack:
        urls = []
        for mode in ("1", "0"):  # each with its embedded worker: either may run a task
            env = base_env(S3TASK_STORE=str(store), S3TASK_DIRECT_UPLOAD=mode)
            url, _pid = stack.enter_context(app_on(free_port(), env, tmp / f"streamlit-workbook-{mode}.log"))
            urls.append(url)
        yield Apps(store, *urls)


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("books")
    out = {}
    for writer, build, name in (("xlsxwriter", xlsxwriter_book, "March export"), ("openpyxl", openpyxl_book, "April")):
        path = tmp / f"{name}.xlsx"
        path.write_bytes(with_pictures(build(tmp / f"plain-{writer}.xlsx").read_bytes()))
        out[writer] = path
    return out


def flat(rows: list[list[str]]) -> list[str]:
    return [cell for row in rows for cell in row]


def grid_shows(page, cells: list[str]) -> list[str]:
    """The preview's cells, once they are ``cells`` (the grid is drawn again a moment after the page's run)."""
    wait_for(lambda: grid_cells(page) == cells, timeout=20, what=f"the preview showed {cells}")
    return grid_cells(page)


def choose_sheet(page, label: str) -> None:
    page.get_by_role("combobox", name="Sheet").click()
    page.get_by_role("option", name=label, exact=True).click()


CASES = [
    # mode, writer, the export's sheet and rows, the sheet submitted
    ("direct", "xlsxwriter", "Customers", SHOWN, "Customers"),
    ("direct", "openpyxl", "Data", OPENPYXL_SHOWN, "Prices"),
    ("fallback", "xlsxwriter", "Customers", SHOWN, "Prices"),
]


@pytest.mark.parametrize(("mode", "writer", "sheet", "shown", "submitted"), CASES)
def test_a_workbook_is_read_by_the_worker_as_its_preview_showed(
    browser, apps: Apps, books: dict[str, Path], mode: str, writer: str, sheet: str, shown, submitted: str
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    try:
        page.goto((apps.direct if mode == "direct" else apps.fallback) + "/new_task")
        settle(page)
        pick_file(page, books[writer], "Header taken from row 3 — the rows above it are skipped")
        settle(page)
        box = page.get_by_role("combobox", name="Sheet")
        assert box.input_value() == f"{sheet} · 5 rows"  # the sheet it opens on, with its rows
        assert page.get_by_role("spinbutton", name="Header row").input_value() == "3"
        expect(page.get_by_text("Dates and times are shown as ISO 8601")).to_be_visible()
        expect(page.locator("[data-testid='stDataFrame'] td").first).to_be_attached()
        grid_shows(page, flat(shown))  # the first rows, as the worker reads them
        if (mode, writer) == ("direct", "xlsxwriter"):
            shot(page, "new-task-workbook")
            if os.environ.get("UPDATE_DOC_SHOTS") == "1":
                shutil.copyfile(ARTIFACTS / "new-task-workbook.png", DOCS_SHOT)

        box.click()
        assert page.get_by_role("option").all_inner_texts() == [f"{sheet} · 5 rows", "Prices · 3 rows"]
        page.keyboard.press("Escape")
        choose_sheet(page, "Prices · 3 rows")
        expect(page.get_by_text("Header taken from row 1", exact=True)).to_be_visible(timeout=20_000)
        settle(page)
        grid_shows(page, flat(PRICES[1:]))
        if submitted != "Prices":
            choose_sheet(page, f"{sheet} · 5 rows")  # and back: its header is found again
            expect(page.get_by_text("Header taken from row 3 — the rows above it are skipped")).to_be_visible()
            settle(page)
        previewed = grid_shows(page, flat(shown) if submitted != "Prices" else flat(PRICES[1:]))
        shot(page, f"new-task-workbook-{mode}-{writer}")

        page.get_by_role("button", name="Submit").click()
        page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=60_000)
        task_id = page.url.rsplit("=", 1)[1]
        wait_for(lambda: apps.record(task_id)["status"] == "completed", timeout=60, what="the task completed")
        header = 3 if submitted != "Prices" else 1
        assert apps.record(task_id)["input_format"] == {"kind": "xlsx", "sheet": submitted, "header_row": header}
        names, *rows = apps.output_rows(task_id)
        assert names == (HEADER if submitted != "Prices" else PRICES[0])
        assert flat(rows[:2]) == previewed  # what the preview showed is what the worker read
    finally:
        page.close()
