"""The active-bell rung by repair and a healed marker, and a ring that fails: in this process, on the
local store (the races and the costs with worker processes: tests/system/test_bell.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hooked import Hooked
from support import csv_rows

from s3task import markers
from s3task.errors import StoreError
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ALICE = Actor("alice")
LAYOUT = Layout("batch-tasks")


@pytest.fixture
def local(tmp_path: Path) -> tuple[LocalStore, Hooked]:
    store = LocalStore(tmp_path / "store")
    return store, Hooked(store, LAYOUT)


def created(service: TaskService) -> str:
    task_id = service.create(ALICE, "bell", "copy").record.task_id
    service.upload_input(ALICE, task_id, csv_rows(3))
    return task_id


def test_repair_and_a_healed_marker_ring_the_bell(local) -> None:
    store, _ = local
    service = TaskService(store, LAYOUT)
    task_id = created(service)
    service.submit(ALICE, task_id)
    store.delete(LAYOUT.active_key(task_id))  # a worker died between its delete and its check
    rung = store.head(LAYOUT.bell_key).etag
    markers.repair(store, LAYOUT)
    assert store.list_keys(LAYOUT.active_root) == [LAYOUT.active_key(task_id)]
    assert store.head(LAYOUT.bell_key).etag != rung, "repair rang the bell"


def test_a_failed_ring_fails_nothing_and_is_logged(local, caplog: pytest.LogCaptureFixture) -> None:
    store, hooked = local
    service = TaskService(hooked, LAYOUT)  # type: ignore[arg-type]
    task_id = created(service)

    def refuse() -> None:
        raise StoreError("the store refused the bell")

    hooked.before_put[LAYOUT.bell_key] = refuse
    assert service.submit(ALICE, task_id).status == "queued"
    assert "could not ring the active-bell" in caplog.text
    assert store.list_keys(LAYOUT.active_root) == [LAYOUT.active_key(task_id)]
