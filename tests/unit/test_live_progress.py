"""The progress object on the local store, in this process: the merge a reader sees, and cancel as
the signal a running attempt's next save meets (with worker processes on S3: tests/system/test_live.py)."""

from __future__ import annotations

from pathlib import Path

from s3task import live
from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks import Actor, TaskService

ALICE = Actor("alice")


def test_progress_object_merge_and_cancel_signal_on_the_local_store(tmp_path: Path) -> None:
    from s3task import lifecycle
    from s3task.progress import Progress
    from s3task.records import update_record
    from s3task.store.local import LocalStore

    store, layout = LocalStore(tmp_path / "store"), Layout()
    service = TaskService(store, layout)
    task_id = service.submit_file(ALICE, "t", "copy", None, b"id\n1\n2\n").task_id
    held = {}

    def claim(r, now):
        new, held["lease"] = lifecycle.claim(r, now, worker_id="w", lease_seconds=60)
        return new

    update_record(store, layout, task_id, claim)
    publisher = live.Publisher(store, layout, task_id, 1)
    assert publisher.save(Progress(processed_count=2, bytes_processed=7, row_count=2, success_count=2))
    seen = service.get(ALICE, task_id)
    assert (seen.processed_count, seen.row_count, seen.bytes_processed) == (2, 2, 7)
    assert read_record(store, layout, task_id)[0].processed_count == 0  # the record itself is untouched
    # Counts that stand still are not saved again: no request at all.
    assert publisher.save(Progress(processed_count=2, bytes_processed=7, row_count=2, success_count=2))
    # An older attempt's object is never shown.
    live.Publisher(store, layout, task_id, 0).save(Progress(processed_count=99, bytes_processed=99))
    assert service.get(ALICE, task_id).processed_count == 2
    # Cancel: the record first, then the signal; the worker's next save fails its condition. (While the
    # counts stand still nothing is saved, and the worker's poll, which reads the record, notices instead.)
    service.cancel(ALICE, task_id)
    # The counts the worker had saved live are kept in the cancelled record (the signal overwrote them).
    cancelled = read_record(store, layout, task_id)[0]
    assert (cancelled.status, cancelled.processed_count, cancelled.row_count, cancelled.bytes_processed) == (
        "abandoned",
        2,
        2,
        7,
    )
    assert publisher.save(Progress(processed_count=2, bytes_processed=7, row_count=2, success_count=2))
    assert not publisher.save(Progress(processed_count=3, bytes_processed=9))
    assert service.get(ALICE, task_id).status == "abandoned"
