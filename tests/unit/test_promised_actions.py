"""A task page promises only what its viewer can do (AppTest, two users): the owner is offered cancel,
continue and start again; another user sees whose the task is, and neither those buttons nor words
that tell them to use them (issue 36 item 10)."""

from __future__ import annotations

from collections.abc import Callable

import app_pages
from app_pages import goto, page_links, run_as_worker, submitted, texts
from streamlit.testing.v1 import AppTest

from s3task.fingerprint import Fingerprint
from s3task.tasks import Actor, TaskService

# The pages' fixtures (tests/app_pages.py): a fresh local store, the embedded worker off, users told apart.
app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir
FILE = Fingerprint("june.csv", 50 * 2**20, "ab" * 32)


def task_page(at: AppTest, task_id: str) -> AppTest:
    at.query_params["id"] = task_id
    return goto(at, "pages/task.py")


def test_a_waiting_task_of_another_user_promises_no_cancel(service: TaskService, app: Callable[..., AppTest]) -> None:
    # Found by the outside review: another user's waiting task said "Only ann or an operator can cancel
    # or retry this task." and then "You can cancel it.", with no button.
    for fingerprint in (None, FILE):  # its file never recorded, or recorded (Continue upload, for ann)
        created = service.create(Actor("ann"), "June", "copy", fingerprint=fingerprint and fingerprint.to_dict())
        task_id = created.record.task_id
        owner = task_page(app("ann"), task_id)
        assert "Cancel task…" in [b.label for b in owner.button]
        assert "You can cancel it." in texts(owner) or "Or cancel the task." in texts(owner)
        other = task_page(app("bob"), task_id)
        said = texts(other)
        assert "This task was created but its file was never submitted." in said
        assert "Only ann or an operator can cancel or retry this task." in said
        assert "can cancel it" not in said and "cancel the task" not in said, said
        assert [b.label for b in other.button] == []  # no Cancel task…, no Continue upload


def test_a_failed_task_of_another_user_does_not_tell_them_to_start_again(
    service: TaskService, app: Callable[..., AppTest]
) -> None:
    task_id = submitted(service, "ann", "June")
    run_as_worker(service, task_id, error="no column 'Mail'", permanent=True)  # its file: it cannot run as it is
    owner = task_page(app("ann"), task_id)
    assert "Correct it and start again with the corrected file." in texts(owner)
    assert "Start again with a corrected file" in page_links(owner)
    other = task_page(app("bob"), task_id)
    said = texts(other)
    assert "The file cannot be processed as it is" in said and "no column 'Mail'" in said
    assert "Correct it and start again" not in said, said
    assert "ann or an operator can correct it and start again" in said
    assert list(page_links(other)) == ["All tasks"] and [b.label for b in other.button] == []


def test_a_cancelled_task_shows_no_count_that_reads_like_a_result(
    service: TaskService, app: Callable[..., AppTest]
) -> None:
    """Issue 36 item 16: a task cancelled mid-run said "Rows written 75,037" and offered nothing."""
    from s3task import lifecycle
    from s3task.progress import Progress
    from s3task.record import TaskRecord
    from s3task.records import update_record
    from ui.detail import CANCELLED_ROWS

    ann = Actor("ann")
    task_id = service.create(ann, "Big list", "copy").record.task_id
    service.upload_input(ann, task_id, b"a,b\n1,2\n")
    service.submit(ann, task_id)
    held: dict[str, object] = {}

    def claim(r: TaskRecord, now: object) -> TaskRecord:
        new, held["lease"] = lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)
        return new

    update_record(service.store, service.layout, task_id, claim)
    progress = Progress(processed_count=75_037, success_count=75_037, row_count=75_037, bytes_processed=5)
    update_record(service.store, service.layout, task_id, lambda r, now: lifecycle.heartbeat(
        r, now, lease=held["lease"], lease_seconds=60, progress=progress))  # fmt: skip
    service.cancel(ann, task_id)
    at = app("ann")
    at.query_params["id"] = task_id
    at = goto(at, "pages/task.py")
    labels = [m.label for m in at.metric]
    assert CANCELLED_ROWS in labels and "Rows written" not in labels
    assert "75,037" in [m.value for m in at.metric]
