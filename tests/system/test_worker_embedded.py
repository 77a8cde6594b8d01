"""The worker embedded in another process (as the app runs it), on the local store."""

from __future__ import annotations

from pathlib import Path

from conftest import wait_for

from s3task.config import Settings
from s3task.records import read_record
from s3task.store import open_store
from s3task.tasks import Actor, TaskService
from s3task.worker import live_workers, start_embedded

ALICE = Actor("alice")


def test_embedded_worker_processes_tasks_and_is_a_singleton(tmp_path: Path) -> None:
    settings = Settings.load({"store": str(tmp_path / "data"), "poll_interval": 0.2, "worker_id": "embedded-1"}, {})
    store, layout = open_store(settings.store)
    service = TaskService(store, layout)
    created = service.create(ALICE, "embedded", "copy")
    task_id = created.record.task_id
    service.upload_input(ALICE, task_id, b"a,b\n1,2\n3,4\n")
    service.submit(ALICE, task_id)

    worker = start_embedded(settings)
    try:
        assert start_embedded(settings) is worker  # reruns and other tabs get the same one
        record = wait_for(lambda: (r := read_record(store, layout, task_id)[0]).status == "completed" and r, timeout=60)
        assert record.row_count == 2
        assert service.read_output(ALICE, task_id)[["a", "b"]].to_dict("records") == [
            {"a": "1", "b": "2"},
            {"a": "3", "b": "4"},
        ]
        assert [w["worker_id"] for w in live_workers(store, layout)] == ["embedded-1"]
    finally:
        worker.stop()
    assert not worker.alive
    assert live_workers(store, layout) == []  # a stopped worker says so
