"""A marker that a retry race needs back is put back through store errors, or kept in mind and put
back on the next poll; a pending task that lost its marker is healed when someone looks at it. In this
process, on the local store (what escapes an attempt, with the worker's attempts: tests/system/test_stranding.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from s3task import lifecycle, markers
from s3task.config import Settings
from s3task.errors import MarkerLost, StoreUnavailable
from s3task.layout import Layout
from s3task.records import read_record, update_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.worker.loop import Worker

ALICE = Actor("alice")
SETTINGS = {"poll_interval": 0.05, "lease_seconds": 60.0, "retry_backoff_seconds": 0.1}


@pytest.fixture
def env(tmp_path: Path) -> tuple[LocalStore, Layout, TaskService]:
    store, layout = LocalStore(tmp_path / "store"), Layout()
    return store, layout, TaskService(store, layout)


def submit(service: TaskService, name: str) -> str:
    task_id = service.create(ALICE, name, "copy").record.task_id
    service.upload_input(ALICE, task_id, b"a,b\n1,2\n")
    service.submit(ALICE, task_id)
    return task_id


class MarkerPutsFail(LocalStore):
    """Refuses the next ``failures`` PUTs of ``active/`` markers (503s from a struggling store)."""

    failures = 0

    def put(self, key, body, mode, **kwargs):
        if "/active/" in key and self.failures > 0:
            self.failures -= 1
            raise StoreUnavailable(f"the store failed on {key} (503, injected)")
        return super().put(key, body, mode, **kwargs)


def _retried_after_final_failure(store: LocalStore, layout: Layout, service: TaskService) -> str:
    """A task that failed for good and was retried by a person: pending, marker present."""
    task_id = submit(service, "retried")
    record_, etag = read_record(store, layout, task_id)
    claimed, lease = lifecycle.claim(record_, store.now(), worker_id="x", lease_seconds=60, max_attempts=3)
    update_record(store, layout, task_id, lambda r, t: claimed, first=(record_, etag))
    update_record(
        store,
        layout,
        task_id,
        lambda r, t: lifecycle.fail(r, t, lease=lease, error="bad", permanent=True, progress=lifecycle.Progress()),
    )
    service.retry(ALICE, task_id)
    return task_id


def test_drop_puts_a_pending_tasks_marker_back_through_store_errors(tmp_path: Path) -> None:
    store, layout = MarkerPutsFail(tmp_path / "s"), Layout()
    task_id = _retried_after_final_failure(store, layout, TaskService(store, layout))
    store.failures = 2  # the re-add after the delete fails twice, then lands
    markers.drop(store, layout, task_id)
    assert layout.active_key(task_id) in store.list_keys(layout.active_root)


def test_a_marker_that_cannot_be_put_back_is_reported_and_restored_by_the_next_poll(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, layout = MarkerPutsFail(tmp_path / "s"), Layout()
    task_id = _retried_after_final_failure(store, layout, TaskService(store, layout))
    worker = Worker(Settings(store=str(tmp_path / "s"), worker_id="w3", **SETTINGS), store=store, layout=layout)
    worker.stop_event.set()  # tidy only: no claims, so the marker is all this test looks at
    store.failures = 100
    with caplog.at_level(logging.ERROR, logger="s3task.markers"), pytest.raises(MarkerLost):
        markers.drop(store, layout, task_id)
    assert any("may be pending" in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)
    assert layout.active_key(task_id) not in store.list_keys(layout.active_root)
    worker._delete_marker(task_id)  # the worker's own drop (tidy) meets the same store: it remembers the task
    store.failures = 0  # the store recovers
    worker.poll_once()
    assert layout.active_key(task_id) in store.list_keys(layout.active_root)
    assert read_record(store, layout, task_id)[0].status == "queued"


def test_a_pending_task_that_lost_its_marker_is_healed_when_someone_looks_at_it(env) -> None:
    """The one window left: a worker dies between dropping a marker and putting it back for a
    task a person just retried. Whoever looks at the task (page, CLI, API) puts it back."""
    from datetime import timedelta

    from s3task.tasks import MARKER_CHECK_AFTER

    store, layout, service = env
    task_id = submit(service, "stuck")
    store.delete(layout.active_key(task_id))  # the dead worker's delete
    assert service.get(ALICE, task_id).status == "queued"
    assert layout.active_key(task_id) not in store.list_keys(layout.active_root)  # fresh: not checked yet
    old = store.now() - timedelta(seconds=MARKER_CHECK_AFTER + 1)
    update_record(store, layout, task_id, lambda r, t: r.replace(updated_at=old.strftime("%Y-%m-%dT%H:%M:%S.000Z")))
    assert service.get(ALICE, task_id).status == "queued"
    assert layout.active_key(task_id) in store.list_keys(layout.active_root)
    store.delete(layout.active_key(task_id))
    service.get(ALICE, task_id)  # checked at most once a minute per task: no HEAD storm from a refreshing page
    assert layout.active_key(task_id) not in store.list_keys(layout.active_root)
