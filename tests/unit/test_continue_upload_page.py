"""The Task page of a task waiting for its upload (AppTest): *Continue upload* is offered where the task
records its file and the user may act on it; otherwise the page says that the file was never
submitted (the browser side: tests/browser/test_resume_upload_browser.py)."""

from __future__ import annotations

from collections.abc import Callable

import app_pages
from app_pages import goto, texts
from streamlit.testing.v1 import AppTest

from s3task.fingerprint import Fingerprint
from s3task.tasks import Actor, TaskService
from ui.detail import NOT_SUBMITTED
from ui.resume_upload import NEVER_SUBMITTED

# The pages' fixtures (tests/app_pages.py): a fresh local store, the embedded worker off, users told apart.
app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir
FILE = Fingerprint("june.csv", 50 * 2**20, "ab" * 32)


def task_page(at: AppTest, task_id: str) -> AppTest:
    at.query_params["id"] = task_id
    return goto(at, "pages/task.py")


def waiting(service: TaskService, user: str, fingerprint: Fingerprint | None) -> str:
    created = service.create(Actor(user), "June", "copy", fingerprint=fingerprint.to_dict() if fingerprint else None)
    return created.record.task_id


def test_a_task_that_records_its_file_offers_continue_upload(service: TaskService, app: Callable[..., AppTest]) -> None:
    task_id = waiting(service, "ann", FILE)
    at = task_page(app("ann"), task_id)
    said = texts(at)
    assert "The upload of june.csv (50.0 MB) did not finish. To continue it, choose the same file again" in said
    assert NEVER_SUBMITTED not in said
    (button,) = [b for b in at.button if b.label == "Continue upload"]
    assert button.disabled  # until the same file is chosen


def test_a_task_without_its_file_recorded_or_of_another_user_offers_no_upload(
    service: TaskService, app: Callable[..., AppTest]
) -> None:
    for task_id, viewer in ((waiting(service, "ann", None), "ann"), (waiting(service, "ann", FILE), "bob")):
        at = task_page(app(viewer), task_id)
        assert NOT_SUBMITTED in texts(at) and "did not finish" not in texts(at)
        # Cancel is promised to ann, who has the button; bob has neither (tests/unit/test_promised_actions.py).
        assert (NEVER_SUBMITTED in texts(at)) == (viewer == "ann")
        assert "Continue upload" not in [b.label for b in at.button]
