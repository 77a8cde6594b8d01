"""A task that ends while its page is watched: the page shows its title and downloads, wherever the
person had scrolled (issue 24 item 3: it was seen left scrolled past them when a task completed).

Serves ``streamlit run app.py`` on a local store with the embedded worker and the test task types; a
gated task holds the page "running" while Chromium scrolls to its bottom, then the gate opens.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import worker_handlers  # noqa: F401  (registers the test task types here too)
from browsers import base_env, settle, shot, streamlit_app
from conftest import CHROMIUM, wait_for
from support import csv_rows

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py"),
]

LOCAL = Actor("local", operator=True)  # the app's development user


def status(store: Path, task_id: str) -> str:
    return read_record(LocalStore(store), Layout(), task_id)[0].status


@pytest.mark.parametrize(
    "viewport",
    [
        {"width": 1366, "height": 500},
        {"width": 375, "height": 667},
    ],  # a laptop's page, shorter than the task's; a phone
    ids=["laptop", "phone"],
)
def test_a_task_that_completes_while_watched_shows_its_title_and_downloads(
    browser, tmp_path: Path, viewport: dict
) -> None:
    from playwright.sync_api import expect

    store, gate = tmp_path / "store", tmp_path / "gate"
    service = TaskService(LocalStore(store), Layout())
    task_id = service.submit_file(LOCAL, "Held list", "test_gated", {"gate": str(gate)}, csv_rows(300)).task_id
    env = base_env(S3TASK_STORE=str(store), S3TASK_HANDLERS="worker_handlers")
    page = browser.new_page(viewport=viewport)
    try:
        with streamlit_app(env, tmp_path / "streamlit.log") as url:
            wait_for(lambda: status(store, task_id) == "running", 60, what="the embedded worker's claim")
            page.goto(f"{url}/task?id={task_id}")
            settle(page)
            expect(page.get_by_role("heading", name="Timeline")).to_be_visible(timeout=20_000)
            title = page.get_by_role("heading", name="Held list")
            page.mouse.move(viewport["width"] - 100, viewport["height"] // 2)  # over the main area, not the sidebar
            page.mouse.wheel(0, 5000)  # as far down as the person can go
            expect(title).not_to_be_in_viewport()
            gate.touch()
            expect(page.get_by_role("heading", name="Result")).to_be_attached(timeout=60_000)
            settle(page)
            expect(title).to_be_in_viewport(timeout=10_000)
            expect(page.get_by_role("button", name="Download result (CSV)")).to_be_in_viewport()
            shot(page, f"task-completed-while-watched-{viewport['width']}")
    finally:
        page.close()
