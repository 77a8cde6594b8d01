"""The step builder of "Prepare the table" in Chromium, as staff use it: an Excel export with a title row
over its header; six steps built from the menu (remove a column, keep the North rows, trim, change the
date format, remove duplicates by a key, a required check), the preview changing with each; Submit; the
app's own worker runs the task, and the stored list is the one built and the output the rows the
preview showed. The task's settings are kept as a recipe, and next month's export is offered it: one click
fills the builder again, and the task made from it has the same list. In a phone-sized window on the way:
nothing wider than the screen, and a step turned off and on with the keyboard alone.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browsers import app_on, base_env, choose, grid_cells, open_section, pick_file, settle, shot
from conftest import CHROMIUM, free_port, wait_for

from s3task.config import Settings

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; install Debian's Chromium"),
    # Some forty page changes, each a few seconds on a busy 2-core machine (223 s measured at load 15):
    # twice the suite's 300 s per test, so a busy CI machine slows it rather than failing it.
    pytest.mark.timeout(600),
]

HEADER = ["Order", "Region", "Name", "Date", "Email", "Notes"]
MARCH = [
    [1001, "North", "  Ann  ", "01/03/2026", "ann@example.com", "first"],
    [1002, "South", "Bob", "02/03/2026", "bob@example.com", "second"],
    [1003, "North", " Cy", "03/03/2026", "", "third"],
    [1001, "North", "Ann", "01/03/2026", "ann@example.com", "again"],
    [1004, "North", "Dee", "15/03/2026", "dee@example.com", ""],
    [1005, "East", "Eve", "16/03/2026", "eve@example.com", ""],
]
#: What the six steps make of March: the South and East rows left out, names trimmed, ISO dates, the
#: second 1001 gone, and the row without an email kept with the check's words.
MARCH_OUT = [
    [*HEADER[:5], "error"],
    ["1001", "North", "Ann", "2026-03-01", "ann@example.com", ""],
    ["1003", "North", "Cy", "2026-03-03", "", "Email: is required"],
    ["1004", "North", "Dee", "2026-03-15", "dee@example.com", ""],
]
APRIL = [
    [2001, "North", " Fay ", "01/04/2026", "fay@example.com", "x"],
    [2002, "West", "Gus", "02/04/2026", "gus@example.com", ""],
    [2001, "North", "Fay", "01/04/2026", "fay@example.com", "again"],
]
APRIL_OUT = [[*HEADER[:5], "error"], ["2001", "North", "Fay", "2026-04-01", "fay@example.com", ""]]
LAPTOP, PHONE = {"width": 1366, "height": 900}, {"width": 390, "height": 844}
STEP_BOX = "div[data-testid='stVerticalBlock'][class*='-step-']"


def export(path: Path, title: str, rows: list[list[object]]) -> Path:
    """A workbook as an export has it: a title merged over the table, a blank row, the header in row 3."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Orders"
    sheet["A1"] = title
    sheet.merge_cells(start_row=1, start_column=1, end_row=1, end_column=len(HEADER))
    sheet.append([])
    sheet.append(HEADER)
    for row in rows:
        sheet.append(row)
    book.save(path)
    return path


class App:
    """The app on a local store with its own worker, and what the store holds."""

    def __init__(self, url: str, root: Path, settings: Settings) -> None:
        self.url, self.root, self.settings = url, root, settings

    def record(self, task_id: str) -> dict:
        (path,) = self.root.glob(f"**/{task_id}/status.json")
        return json.loads(path.read_text())

    def steps(self, task_id: str) -> dict:
        """The task's step list, kept beside its record (steps.json), as the record pins it."""
        (path,) = self.root.glob(f"**/{task_id}/steps.json")
        return json.loads(path.read_text())

    def output_rows(self, task_id: str) -> list[list[str]]:
        (path,) = self.root.glob(f"**/{task_id}/output-attempt-*.csv")
        return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))

    def completed(self, task_id: str) -> dict:
        """The task's record once it is completed. The submit wakes the app's worker at once (else it finds
        the task within a poll), and a task this small ends within one lease of its claim."""
        within = 2 * self.settings.poll_interval + self.settings.lease_seconds
        return wait_for(lambda: (r := self.record(task_id))["status"] == "completed" and r, within, 0.2, "completed")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    tmp = tmp_path_factory.mktemp("step-builder")
    env = base_env(S3TASK_STORE=str(tmp / "store"))
    with app_on(free_port(), env, tmp / "streamlit-steps.log") as (url, _pid):
        yield App(url, tmp / "store", Settings.load(environ=env))


# --- a person's hands --------------------------------------------------------------------------------------------


def step(page, n: int):
    """Step ``n``'s box (1 = the first)."""
    return page.locator(STEP_BOX).nth(n - 1)


def take(field, option: str) -> None:
    """Type ``option`` into the select box ``field`` and take it from the list, as a person does (a rerun of
    the page may close the open list under the typing: then it is opened again)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    wanted = field.page.get_by_role("option", name=option, exact=True)
    deadline = time.monotonic() + 30
    while True:
        field.click()
        field.fill(option)  # the list narrows to what matches
        try:
            wanted.click(timeout=5_000)
            return
        except PlaywrightTimeout:
            assert time.monotonic() < deadline, f"the option {option!r} never came to be clicked"
            settle(field.page)


def add(page, title: str) -> object:
    """Choose ``title`` in the menu, press Add step; the new step's box, once it is there."""
    from playwright.sync_api import expect

    n = page.locator(STEP_BOX).count() + 1
    take(page.get_by_role("combobox", name="Next step", exact=True), title)
    page.get_by_role("button", name="Add step").click()
    box = step(page, n)
    expect(box.get_by_text(f"{n}. {title}", exact=True)).to_be_visible(timeout=20_000)
    settle(page)
    return box


def pick(box, name: str, option: str) -> None:
    """In a select box or a multi-select of ``box``, take ``option``."""
    field = box.get_by_role("combobox", name=name, exact=True)
    take(field, option)
    field.press("Escape")  # a multi-select's list stays open for more
    settle(box.page)


def says(box, words: str) -> None:
    """``box`` shows ``words`` (the page puts an invisible word joiner after a colon: ui/format.py, plain)."""
    from playwright.sync_api import expect

    shown = "".join(re.escape(c) + ("\u2060?" if c in ":@" else "") for c in words)
    expect(box.get_by_text(re.compile(f"^{shown}$"))).to_be_visible(timeout=20_000)


def type_in(box, name: str, text: str) -> None:
    field = box.get_by_role("textbox", name=name, exact=True)
    field.fill(text)
    field.press("Enter")
    settle(box.page)


def upload(page, url: str, workbook: Path) -> None:

    page.goto(url + "/new_task")
    settle(page)
    pick_file(page, workbook, "Header taken from row 3 — the rows above it are skipped")
    settle(page)


def build_six_steps(page) -> None:
    """The list, one step at a time, each said in words on the preview's rows as it is made."""
    box = add(page, "Remove columns")
    pick(box, "Columns to remove", "Notes")
    says(box, "Removes 1 column (Notes).")
    box = add(page, "Keep rows")
    pick(box, "Condition 1: column", "Region")
    type_in(box, "Value", "North")
    says(box, "Removes 2 of these 6 rows.")
    says(add(page, "Remove spaces at the ends"), "Changes 2 cells.")
    box = add(page, "Change date format")
    pick(box, "Columns", "Date")
    type_in(box, "Written as now", "DD/MM/YYYY")
    says(box, "Changes 4 cells.")
    box = add(page, "Remove duplicate rows")
    pick(box, "Key columns", "Order")
    says(box, "In these 6 rows: removes 1 of the 4 rows left. The task applies it to the whole file.")
    box = add(page, "Check values")
    pick(box, "Column", "Email")
    box.get_by_text("Required (not empty)", exact=True).click()  # its label, as a person does
    settle(page)
    says(box, "Gives 1 row a problem.")


def on_a_phone(page) -> None:
    """The same page in a phone's window: nothing wider than the screen (the tables scroll inside
    themselves), and a step turned off and on again with the keyboard alone."""
    from playwright.sync_api import expect

    page.set_viewport_size(PHONE)
    settle(page)
    wide = page.evaluate("document.scrollingElement.scrollWidth")
    assert wide <= PHONE["width"], f"the page is {wide} px wide in a {PHONE['width']} px window"
    last = step(page, 6)
    last.get_by_role("button", name="Turn off").focus()
    page.keyboard.press("Enter")
    says(last, "Off: this step is kept in the list but not run.")
    settle(page)
    shot(page, "step-builder-phone")
    last.get_by_role("button", name="Turn on").focus()
    page.keyboard.press("Enter")
    says(last, "Gives 1 row a problem.")
    expect(last.get_by_role("button", name="Turn off")).to_be_visible()
    page.set_viewport_size(LAPTOP)
    settle(page)


def flat(rows: list[list[str]]) -> list[str]:
    return [cell for row in rows for cell in row]


def submitted(page) -> str:
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=30_000)
    return page.url.rsplit("=", 1)[1]


# --- the tests ---------------------------------------------------------------------------------------------------


def test_six_steps_built_run_on_the_worker_and_come_back_as_a_recipe(browser, app: App, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    march = export(tmp_path / "Orders March.xlsx", "Orders, March 2026", MARCH)
    april = export(tmp_path / "Orders April.xlsx", "Orders, April 2026", APRIL)
    page = browser.new_page(viewport=LAPTOP)
    try:
        upload(page, app.url, march)
        choose(page, "What should happen to the rows?", "Prepare the table")
        settle(page)
        expect(page.get_by_text("To submit, add at least one step.")).to_be_visible()
        build_six_steps(page)
        wait_for(lambda: grid_cells(page) == flat(MARCH_OUT[1:]), 20, what="the preview after the six steps")
        expect(page.get_by_role("button", name="Submit")).to_be_enabled()
        shot(page, "step-builder-1-built")
        on_a_phone(page)
        task_id = submitted(page)
        record = app.completed(task_id)
        assert record["task_type"] == "steps"
        assert record["payload"] == {} and record["steps_etag"]  # the list is kept beside the record
        assert app.steps(task_id) == {"steps": [
            {"step": "drop_columns", "columns": ["Notes"]},
            {"step": "keep_rows", "conditions": [{"column": "Region", "is": "equals", "value": "North",
                                                  "ignore_case": False}]},
            {"step": "trim"},
            {"step": "format_dates", "columns": ["Date"], "from": "DD/MM/YYYY"},
            {"step": "remove_duplicates", "columns": ["Order"]},
            {"step": "check", "column": "Email", "required": True},
        ]}  # fmt: skip
        assert app.output_rows(task_id) == MARCH_OUT  # what the preview showed is what the worker wrote

        page.goto(f"{app.url}/task?id={task_id}")  # the task's page as it is now: completed
        settle(page)
        name = open_section(
            page, "Keep these settings as a recipe", lambda s: s.get_by_role("textbox", name="Recipe name")
        )
        name.fill("Orders monthly")
        name.press("Enter")
        expect(page.get_by_text("Saved the recipe “Orders monthly”.")).to_be_visible(timeout=20_000)

        upload(page, app.url, april)
        expect(page.get_by_text("Looks like Orders monthly — use that recipe?")).to_be_visible(timeout=20_000)
        page.get_by_role("button", name="Use this recipe").click()
        expect(page.get_by_text("Filled in with the recipe “Orders monthly”")).to_be_visible(timeout=20_000)
        settle(page)
        expect(page.locator(STEP_BOX)).to_have_count(6)
        says(step(page, 2), "Removes 1 of these 3 rows.")
        says(step(page, 4), "Changes 2 cells.")
        wait_for(lambda: grid_cells(page) == flat(APRIL_OUT[1:]), 20, what="April's preview after the recipe's steps")
        shot(page, "step-builder-2-recipe")
        again = submitted(page)
        made = app.completed(again)
        assert made["recipe_id"].endswith("/orders-monthly") and made["recipe_version"] == 1  # names its recipe
        assert app.steps(again) == app.steps(task_id)
        assert app.output_rows(again) == APRIL_OUT
    finally:
        page.close()
