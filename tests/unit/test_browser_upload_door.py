"""The door's browser-upload methods act only on what the caller may act on (found by the outside review:
a method that trusted the record it was handed gave another user's queued task a fresh upload URL).
Each takes a task id and reads the task itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from s3task.errors import AccessDenied, InvalidTransition
from s3task.fingerprint import Fingerprint
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web.transfer import signer_for

ANN, BOB = Actor("ann"), Actor("bob")
FILE = Fingerprint("june.csv", 8, "ab" * 32)


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    store = LocalStore(tmp_path / "store")
    return TaskService(store, Layout(), url_signer=signer_for(store, key="k" * 32))


def test_another_user_gets_no_link_and_cannot_continue_the_upload(service: TaskService) -> None:
    task_id = service.begin_browser_upload(ANN, "June", "copy", None, None, FILE.size, FILE).task_id
    assert service.browser_upload_link(ANN, task_id) is not None
    assert service.browser_upload_link(BOB, task_id) is None
    with pytest.raises(AccessDenied):
        service.continue_browser_upload(BOB, task_id, FILE)
    assert service.continue_browser_upload(ANN, task_id, FILE).task_id == task_id


def test_a_task_no_longer_waiting_for_its_file_cannot_be_sent_to_again(service: TaskService) -> None:
    task_id = service.begin_browser_upload(ANN, "June", "copy", None, None, FILE.size, FILE).task_id
    service.upload_input(ANN, task_id, b"a,b\n1,2\n")
    service.submit(ANN, task_id)
    assert service.browser_upload_link(ANN, task_id) is None
    with pytest.raises(InvalidTransition, match="cannot replace the input"):
        service.continue_browser_upload(ANN, task_id, FILE)


def test_the_size_of_another_users_result_is_not_told(service: TaskService) -> None:
    task_id = service.create(ANN, "June", "copy").record.task_id
    with pytest.raises(AccessDenied):
        service.output_size(BOB, task_id)
