"""Recipes and the needed column in Chromium (issue 22 items 2 and 3), as staff meet them: a task's
page keeps its settings as a recipe; next month's file, with the same columns in another order, is
offered that recipe on the New task page; one click fills the form (type, format, the email column),
and the task submitted is made that way. Keyboard for the form, a phone-sized window for a look."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browsers import base_env, open_section, pick_file, settle, shot, streamlit_app
from conftest import CHROMIUM, wait_for
from support import csv_bytes

from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py"),
]

LOCAL = Actor("local", operator=True)  # the app's development user
MARCH = [["Kunde", "Kontakt", "Betrag"], *[[f"K{i}", f"k{i}@example.com", f"{i},5"] for i in range(5)]]
APRIL = [["Betrag", "kunde", "KONTAKT"], *[[f"{i},0", f"K{i}", f"k{i}@example.org"] for i in range(5)]]


def semicolons(rows: list[list[str]]) -> bytes:
    return csv_bytes(rows, quote_all=True).replace(b'","', b'";"')


def stored(store: Path, task_id: str) -> dict:
    (path,) = store.glob(f"**/{task_id}/status.json")
    return json.loads(path.read_text())


@pytest.mark.parametrize("viewport", [{"width": 1366, "height": 900}, {"width": 390, "height": 844}],
                         ids=["laptop", "phone"])  # fmt: skip
def test_a_recipe_kept_from_march_fills_in_april(browser, tmp_path: Path, viewport: dict) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    march = service.submit_file(LOCAL, "March", "email_enrichment", None, semicolons(MARCH), {"delimiter": ";"})
    april = tmp_path / "april.csv"
    april.write_bytes(semicolons(APRIL))
    page = browser.new_page(viewport=viewport)
    try:
        with streamlit_app(base_env(S3TASK_STORE=str(store), S3TASK_EMBEDDED_WORKER="0"), tmp_path / "app.log") as url:
            page.goto(f"{url}/task?id={march.task_id}")
            settle(page)
            name = open_section(
                page, "Keep these settings as a recipe", lambda s: s.get_by_role("textbox", name="Recipe name")
            )
            name.fill("CRM monthly")
            name.press("Enter")  # a form's text box submits it, as a person expects
            expect(page.get_by_text("Saved the recipe “CRM monthly”.")).to_be_visible(timeout=20_000)
            shot(page, f"recipe-1-saved-{viewport['width']}")

            page.goto(f"{url}/new_task")
            settle(page)
            pick_file(page, april, "Looks like CRM monthly — use that recipe?")
            shot(page, f"recipe-2-offered-{viewport['width']}")
            page.get_by_role("button", name="Use this recipe").click()
            expect(page.get_by_text("Filled in with the recipe “CRM monthly”")).to_be_visible(timeout=20_000)
            settle(page)
            box = page.get_by_role("combobox", name="What should happen to the rows?")
            expect(box).to_have_value("Check and enrich email addresses")
            expect(page.get_by_role("combobox", name="Email column")).to_have_value("KONTAKT")
            expect(page.get_by_role("combobox", name="Values separated by")).to_have_value("Semicolons")
            shot(page, f"recipe-3-filled-{viewport['width']}")
            page.get_by_role("button", name="Submit").click()
            page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=30_000)
            task_id = page.url.rsplit("=", 1)[1]
            record = wait_for(lambda: (r := stored(store, task_id))["status"] == "queued" and r, 30, what="queued")
            assert record["task_type"] == "email_enrichment"
            assert (record["input_format"]["delimiter"], record["payload"]["email_column"]) == (";", "KONTAKT")
    finally:
        page.close()
