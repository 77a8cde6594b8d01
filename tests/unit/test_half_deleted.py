"""A delete half done on a store without conditional deletes (LocalStack: s3task.store.s3_writer's
tombstone) leaves an empty object for a moment, or for good if its process dies. Nobody reads it as data."""

from __future__ import annotations

from pathlib import Path

import pytest

from s3task.errors import TaskNotFound
from s3task.ids import new_task_id
from s3task.layout import Layout
from s3task.notify import outbox
from s3task.records import Records
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

LAYOUT = Layout("batch-tasks")


def test_an_empty_record_is_a_task_that_is_not_there(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    service = TaskService(store, LAYOUT)
    kept = service.create(Actor("ann"), "kept", "copy").record.task_id
    gone = service.create(Actor("ann"), "gone", "copy").record.task_id
    store.put(LAYOUT.status_key(gone), b"", PutMode.OVERWRITE)  # the tombstone left by a dead discard
    with pytest.raises(TaskNotFound):
        Records(store, LAYOUT).read(gone)
    page = service.list(Actor("ann"))
    assert [r.task_id for r in page.tasks] == [kept]
    assert page.problems == []  # not "unreadable": simply not there


def test_the_outbox_sweep_finishes_a_half_done_delete_instead_of_calling_it_missed(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    key = LAYOUT.outbox_key(1_000, new_task_id(), 2, "ab12")
    store.put(key, b"", PutMode.OVERWRITE)
    sent: list[str] = []
    counts = outbox.sweep(store, LAYOUT, recover_seconds=0, taker="w1", send=lambda k, e: sent.append(k))
    assert counts == {"resent": 0, "dropped": 0, "missed": 0} and sent == []
    assert list(store.list_keys(LAYOUT.outbox_root())) == []  # the delete is finished
    assert outbox.missed(store, LAYOUT) == []
