"""A lookup's reference file uploaded in the step builder, in Chromium, in a phone-sized window and with the
keyboard: the step's "Upload" button reached with Tab and pressed with Space, the file chosen; the app's own
worker copies it as the task "Reference: managers.csv" while the step says it is preparing (its refresh looks
again); then the step uses it, the preview looks up from it, nothing is wider than the screen, and the task
submitted stores the reference task's id and is run by the worker with the managers added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browsers import choose, choose_file_with_keys, grid_cells, pick_file, settle
from conftest import CHROMIUM, wait_for
from support import csv_bytes
from test_step_builder import PHONE, STEP_BOX, App, add, app, pick, says, submitted  # noqa: F401 (app: a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; install Debian's Chromium"),
]
ORDERS = [["Order", "Account"], ["1", "A1"], ["2", "B2"], ["3", "Z9"]]
MANAGERS = [["Account", "Manager"], ["A1", "Mo"], ["B2", "Jo"], ["C3", "Li"]]


def reference_task(root: Path) -> dict | None:
    """The record of the task the reference file became, once there is one (there is never more)."""
    found = [json.loads(p.read_text()) for p in root.glob("**/status.json")]
    made = [r for r in found if r["task_name"] == "Reference: managers.csv"]
    assert len(made) <= 1, made
    return made[0] if made else None


def test_a_reference_file_chosen_with_the_keyboard_on_a_phone_is_copied_and_looked_up(
    browser,
    app: App,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    (tmp_path / "orders.csv").write_bytes(csv_bytes(ORDERS))
    (tmp_path / "managers.csv").write_bytes(csv_bytes(MANAGERS))
    page = browser.new_page(viewport=PHONE)
    try:
        page.goto(app.url + "/new_task")
        settle(page)
        pick_file(page, tmp_path / "orders.csv", "2 columns: Order, Account", first=True)
        choose(page, "What should happen to the rows?", "Prepare the table")
        settle(page)
        box = add(page, "Look up columns from a reference table")
        pick(box, "Key columns in this table", "Account")
        take = box.get_by_role("textbox", name="Columns to add", exact=True)
        take.fill("Manager")
        take.press("Tab")  # a text area keeps what was typed when it is left
        settle(page)

        # Every kind of file it takes is shown, wrapped, not cut at the phone's edge ("XLSX, X…").
        kinds = box.get_by_test_id("stFileUploaderDropzoneInstructions")
        expect(kinds).to_contain_text("CSV, TXT, TSV, XLSX, XLSM")
        cut = kinds.evaluate("e => [e, ...e.querySelectorAll('*')].some(n => n.scrollWidth > n.clientWidth + 1)")
        assert not cut, "the uploader's line of file kinds is cut at the box's edge"
        browse = box.get_by_role("button", name="Upload", exact=True)
        # Focused where Tab lands after the reference box (the keyboard reaches it), then Space: a button's
        # key (Streamlit's Upload button does nothing on Enter).
        choose_file_with_keys(page, browse, tmp_path / "managers.csv")
        # The worker's pickup (woken by the submit, else within a poll), a copy of three rows within its lease,
        # and the step's next look (every refresh): the deadline of the words that say it is used.
        within = 2 * app.settings.poll_interval + app.settings.lease_seconds + 1
        made = wait_for(lambda: reference_task(app.root), 20, 0.2, "the reference file's task")
        record = app.completed(made["task_id"])
        assert (record["task_type"], record["row_count"]) == ("copy", 3)
        says(page.locator(STEP_BOX).first, f"Uses managers.csv (3 rows), kept as the task “Reference: managers.csv”: "
             f"{record['task_id']}.")  # fmt: skip
        expect(page.get_by_text("Preparing the reference table…")).to_have_count(0, timeout=within * 1000)
        wait_for(
            lambda: grid_cells(page) == ["1", "A1", "Mo", "", "2", "B2", "Jo", "", "3", "Z9", "",
                                         "no match for Account in the reference table"],
            20,
            what="the preview looked up from the reference",
        )  # fmt: skip
        wide = page.evaluate("document.scrollingElement.scrollWidth")
        assert wide <= PHONE["width"], f"the page is {wide} px wide in a {PHONE['width']} px window"

        name = page.get_by_role("textbox", name="Task name")
        name.fill("orders")
        name.press("Enter")
        settle(page)
        task_id = submitted(page)
        assert app.steps(task_id)["steps"][0]["reference"] == record["task_id"]
        app.completed(task_id)
        assert [row[2] for row in app.output_rows(task_id)] == ["Manager", "Mo", "Jo", ""]
    finally:
        page.close()
