"""Records for tests: a record as created, its submit, and a store that lets a test interfere with updates."""

from __future__ import annotations

from s3task import lifecycle
from s3task.ids import new_task_id
from s3task.layout import Layout
from s3task.record import TaskRecord
from s3task.store.base import ObjectStore

LAYOUT = Layout("batch-tasks")


def make_record(**changes) -> TaskRecord:
    task_id = new_task_id()
    record = TaskRecord(
        task_id=task_id,
        task_name="prices ü",
        created_by="ada",
        task_type="copy",
        payload={"sep": ",", "n": 3},
        revision=1,
        write_id="w0",
        input_object_path=LAYOUT.input_key(task_id),
        created_at="2026-01-01T12:00:00.000Z",
        updated_at="2026-01-01T12:00:00.000Z",
        history=[{"at": "2026-01-01T12:00:00.000Z", "event": "create", "attempt": 0}],
    )
    return record.replace(**changes)


def submit(record: TaskRecord, now) -> TaskRecord:
    return lifecycle.submit(record, now, input_etag='"e"', input_size=10)


class Wrapper:
    """A store that lets a test interfere with updates of one key."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.description = "wrapped"
        self.updates = 0

    def put(self, key, body, mode, **kwargs):
        if mode.kind == "update":
            self.updates += 1
            return self.on_update(key, body, mode, **kwargs)
        return self.inner.put(key, body, mode, **kwargs)

    def on_update(self, key, body, mode, **kwargs):
        return self.inner.put(key, body, mode, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)
