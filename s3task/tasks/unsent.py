"""What was sent of a file whose task is cancelled before it was queued: dropped with the cancel.

A task still waiting for its file was never queued, so no worker reads what was sent of it. A cancel
(the person's, or the service giving up an upload it refused: a file larger than declared) drops:

- the upload noted on the task (``input_upload``: a CLI's, or a browser's in parts), so a ``--resume``
  still sending is refused by the store;
- every other unfinished upload of its input (S3: each multipart upload started for it, however many);
- the input itself.

Each is a separate store call, best effort, and one that fails is logged and does not stop the others:
on the least-privilege role of docs/TRANSFERS.md, listing the unfinished uploads may be denied, and the
delete still goes; the bucket's rule drops unfinished uploads after a day anyway.

The record is written first (cancelled, which no task leaves), the drops after: a process that dies in
between leaves the file of a cancelled task, never a queued task without its file. ``s3task repair``
deletes such a file (:func:`drop_left`), as it does one a stale upload link sent after the cancel.
"""

from __future__ import annotations

import logging

from ..errors import NotFound, S3TaskError
from ..record import TaskRecord
from ..states import Status
from ..store.base import MultipartStore, ObjectStore

log = logging.getLogger(__name__)


def drop_unsent(store: ObjectStore, before: TaskRecord) -> None:
    """``before``: the record as the cancel found it; nothing is done unless it was waiting for its file."""
    if before.status != Status.CREATED:
        return
    key = before.input_object_path
    upload_id = (before.input_upload or {}).get("upload_id")
    if upload_id and isinstance(store, MultipartStore):
        _tried(f"aborting the upload noted on task {before.task_id}", store.abort_multipart, key, str(upload_id))
    drop = getattr(store, "drop_unfinished", None)  # s3task.store.base.Leftovers
    if drop is not None:
        _tried(f"aborting the other unfinished uploads of task {before.task_id}'s file", drop, key)
    # Last: an upload joined while the others were aborted is deleted too.
    _tried(f"deleting what was sent of task {before.task_id}'s file", store.delete, key)


def _tried(what: str, call: object, *args: str) -> None:
    try:
        call(*args)  # type: ignore[operator]
    except S3TaskError as e:
        log.warning("%s after its cancel failed (left to the bucket's clean-up rule): %s", what, e)


def drop_left(store: ObjectStore, record: TaskRecord) -> bool:
    """Delete the file of a task cancelled before it was ever queued (no input pinned), if one is there: what a
    cancel that died before its delete left, or what an upload link sent after it. True if one was deleted."""
    if record.status != Status.ABANDONED or record.input_etag is not None:
        return False
    try:
        store.head(record.input_object_path)
    except NotFound:
        return False
    store.delete(record.input_object_path)
    return True
