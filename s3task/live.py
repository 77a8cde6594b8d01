"""Live progress between heartbeats, and the cancel signal that rides on it.

The task record (``status.json``) has one writer, the worker running the
attempt, and it renews its lease (with the counts) every third of the lease:
every 20 s by default. A page that re-reads every 2 s would see counts move in
20 s steps. So the worker also keeps one small object per attempt,
``<task>/progress-attempt-N.json`` (:meth:`s3task.layout.Layout.progress_key`),
rewritten every :data:`LIVE_SECONDS` while its counts move. It is not the
record: nothing decides anything from it, and readers (:func:`merged`, used by
``TaskService.get`` and so by the app, the API and the CLI) lay its counts over
the record's only while the record says ``running`` with that attempt.

The worker writes it with a condition on its own last ETag (the first write
with If-None-Match), so it notices when anyone else has written it. Cancel
does, right after its record write (:func:`signal_cancel`): the worker's next
write fails its precondition, the worker re-reads the record, finds it no
longer owns the task and kills the attempt's process within
:data:`LIVE_SECONDS` and a tick. While the counts stand still there is no
write to fail; then the worker's own poll, which reads every active task's
record anyway, sees the cancelled record (or the task's ``active/`` marker
gone) within a poll interval and tells the attempt to re-read
(:meth:`s3task.worker.attempt.Attempt.doubt`). Neither adds a request in
steady state. A canceller that dies between its two writes leaves the signal
out; the poll (which sees the cancelled record) or, at the latest, the next
heartbeat (lease ÷ 3) notices instead.
"""

from __future__ import annotations

import json
import logging
from dataclasses import fields, replace
from typing import Any

from .errors import AlreadyExists, NotFound, PreconditionFailed, S3TaskError, StoreError
from .layout import Layout
from .progress import COUNTS, Progress
from .record import TaskRecord
from .states import Status
from .store.base import ObjectStore, PutMode

log = logging.getLogger("s3task.live")

#: Seconds between two saves of a running attempt's counts (while they move). Below the app's
#: default refresh (2 s), so every refresh of an open page finds newer counts than the last.
LIVE_SECONDS = 1.5
JSON_TYPE = "application/json"
_COUNTS = COUNTS
_RECORD_FIELDS = frozenset(f.name for f in fields(TaskRecord))


def encode(attempt: int, progress: Progress, seq: int) -> bytes:
    """The object's body: the attempt, a sequence number (so every write differs) and the counts."""
    return json.dumps({"attempt": attempt, "seq": seq, **{name: getattr(progress, name) for name in COUNTS}}).encode()


def decode(data: bytes) -> dict[str, Any] | None:
    """The counts saved in a progress object, or None if it holds none (a cancel's note, or junk)."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("attempt"), int):
        return None
    counts = {name: raw[name] for name in _COUNTS if name in raw}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        return None
    if "processed_count" not in counts or "bytes_processed" not in counts:
        return None
    return {"attempt": raw["attempt"], **counts}


def merged(store: ObjectStore, layout: Layout, record: TaskRecord) -> TaskRecord:
    """The record with its running attempt's latest saved counts laid over its own (one GET).

    Only for a record that says ``running``: the object of an attempt that is
    over, or of an older attempt, is never shown. Counts older than the
    record's (a heartbeat after the last save) are not. A look at a task never
    fails for this: on any store trouble the record is returned as it is.
    """
    if record.status != Status.RUNNING or record.attempt_id < 1:
        return record
    try:
        got = store.get(layout.progress_key(record.task_id, record.attempt_id))
    except NotFound:
        return record
    except S3TaskError as e:
        log.debug("could not read the live progress of %s: %s", record.task_id, e)
        return record
    live = decode(got.body)
    if live is None or live.pop("attempt") != record.attempt_id:
        return record
    if live["bytes_processed"] < record.bytes_processed or live["processed_count"] < record.processed_count:
        return record
    return record.replace(**{name: value for name, value in live.items() if name in _RECORD_FIELDS})


def signal_cancel(store: ObjectStore, layout: Layout, before: TaskRecord, by: str) -> None:
    """Tell the worker of a task that was running (``before`` the cancel) to stop now.

    Called after the cancelled record is written. Overwrites the attempt's
    progress object, so the worker's next conditional write or read of it fails.
    Never raises: without the signal, the worker's next heartbeat notices.
    """
    if before.status != Status.RUNNING or before.attempt_id < 1:
        return
    body = json.dumps({"attempt": before.attempt_id, "cancelled_by": by}).encode()
    try:
        store.put(
            layout.progress_key(before.task_id, before.attempt_id), body, PutMode.OVERWRITE, content_type=JSON_TYPE
        )
    except S3TaskError as e:
        log.warning("could not signal the worker of %s to stop (its next heartbeat will): %s", before.task_id, e)


class Publisher:
    """The worker's side: saves one attempt's counts, and tells when someone else wrote the object."""

    def __init__(self, store: ObjectStore, layout: Layout, task_id: str, attempt: int) -> None:
        self.store = store
        self.key = layout.progress_key(task_id, attempt)
        self.attempt = attempt
        self.etag: str | None = None
        self.saved: Progress | None = None
        self._seq = 0

    def save(self, progress: Progress) -> bool:
        """Write the counts if they moved since the last save, else check the object is still ours.

        False: someone else wrote the object (a cancel, as a rule): the caller
        re-reads the record. Store trouble is not that: the save is skipped
        (readers see the record's counts meanwhile) and tried again next time.
        """
        if self.saved == progress:
            return True  # nothing new to say; a cancel meanwhile is noticed by the worker's poll
        self._seq += 1
        mode = PutMode.update(self.etag) if self.etag else PutMode.CREATE
        try:
            self.etag = self.store.put(
                self.key, encode(self.attempt, progress, self._seq), mode, content_type=JSON_TYPE
            )
        except (PreconditionFailed, AlreadyExists):
            return False
        except StoreError as e:  # may have landed: then the next write fails its condition, and adopt() heals it
            log.debug("could not save the live progress (%s): %s", self.key, e)
            return True
        self.saved = replace(progress)
        return True

    def adopt(self) -> None:
        """After the record said we still own the task: take the stored object as ours.

        (Our own write whose response was lost, as an SDK retry reports it: a failed condition.)
        """
        try:
            self.etag = self.store.get(self.key).etag
        except NotFound:
            self.etag = None
        except StoreError as e:
            log.debug("could not re-read the live progress (%s): %s", self.key, e)
