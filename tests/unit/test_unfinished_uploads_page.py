"""The New task page lists this person's uploads that did not finish (issue 36 item 13): a reload mid-upload
lands on an empty New task page, and *Continue upload* was offered only on the task's page, which the
person did not find. Each is offered with *Continue it* (the task's page) and *Discard* (AppTest; the reload
in Chromium: tests/browser/test_resume_upload_browser.py)."""

from __future__ import annotations

from collections.abc import Callable

import app_pages
from app_pages import goto, texts
from streamlit.testing.v1 import AppTest

from s3task.fingerprint import Fingerprint
from s3task.records import read_record
from s3task.tasks import Actor, TaskService

app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir
FILE = Fingerprint("june.csv", 50 * 2**20, "ab" * 32)
SAID = "The upload of **june.csv** (50.0 MB) for “June” did not finish."


def waiting(service: TaskService, user: str, fingerprint: Fingerprint | None = FILE) -> str:
    created = service.create(Actor(user), "June", "copy", fingerprint=fingerprint.to_dict() if fingerprint else None)
    return created.record.task_id


def test_an_unfinished_upload_is_offered_on_the_new_task_page_and_can_be_discarded(
    service: TaskService, app: Callable[..., AppTest]
) -> None:
    task_id = waiting(service, "ann")
    at = goto(app("ann"), "pages/new_task.py")
    assert SAID in texts(at)
    (discard,) = [b for b in at.button if b.label == "Discard"]
    discard.click().run()
    assert SAID not in texts(at)
    assert read_record(service.store, service.layout, task_id)[0].status == "abandoned"
    assert SAID not in texts(goto(app("ann"), "pages/new_task.py"))  # nor on a fresh visit


def test_another_users_upload_or_one_without_its_file_recorded_is_not_offered(
    service: TaskService, app: Callable[..., AppTest]
) -> None:
    waiting(service, "ann")
    waiting(service, "bob", None)  # made elsewhere: no file recorded, nothing to continue it with
    at = goto(app("bob"), "pages/new_task.py")
    assert "did not finish" not in texts(at) and "Discard" not in [b.label for b in at.button]
    submitted = service.create(Actor("bob"), "Done", "copy", fingerprint=FILE.to_dict()).record.task_id
    service.upload_input(Actor("bob"), submitted, b"a,b\n1,2\n")
    service.submit(Actor("bob"), submitted)  # queued: its upload finished
    assert "did not finish" not in texts(goto(app("bob"), "pages/new_task.py"))
