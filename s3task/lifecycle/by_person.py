"""The transitions people ask for, through the door or a tool of theirs: an upload noted, submit, a
correction listed, retry (by a person, or the worker's automatic one once due), cancel."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import InvalidTransition
from ..progress import Progress
from ..record import MAX_CORRECTIONS, TaskRecord, parse_iso, to_iso
from ..states import State, Status
from .table import allows, describe, move


def note_upload(record: TaskRecord, now: datetime, *, upload: dict[str, Any],
                fingerprint: dict[str, Any] | None = None, note: str = "") -> TaskRecord:  # fmt: skip
    """Note on a task still waiting for its file how its upload goes on: ``upload`` ({"upload_id",
    "part_size"}, and "resend": the parts held that must go again; {} when a new one is to start) and, if
    given, the ``fingerprint`` of the file it is of (s3task.fingerprint); ``note``: why, in the history. A
    task already submitted or cancelled is refused, its upload long over."""
    changes: dict[str, Any] = {"input_upload": dict(upload), "_note": note}
    if fingerprint is not None:
        changes["input_fingerprint"] = dict(fingerprint)
    return move(record, State.CREATED, now, "upload", **changes)


def submit(record: TaskRecord, now: datetime, *, input_etag: str, input_size: int) -> TaskRecord:
    return move(
        record,
        State.QUEUED,
        now,
        "submit",
        input_etag=input_etag,
        input_size_bytes=input_size,
        queued_at=to_iso(now),
    )


def check_correctable(record: TaskRecord) -> None:
    """Refuse, in words, another correction of a task that has MAX_CORRECTIONS already (its record's size)."""
    if (n := len(record.corrections)) >= MAX_CORRECTIONS:
        raise InvalidTransition(f"this task has {n} corrections already; start a new task with the rows still to fix")


def note_correction(record: TaskRecord, now: datetime, *, correction_id: str) -> TaskRecord | None:
    """List on a completed task the task that will process its corrected rows (None: listed already).

    Written before that task is created (s3task.tasks.corrections), so no correction exists that its
    original does not list; an id listed whose creation never happened is no task, and shown as none."""
    if correction_id in record.corrections:
        return None
    check_correctable(record)
    return move(record, State.COMPLETED, now, "correct", corrections=[*record.corrections, correction_id])


def retry_due(record: TaskRecord, now: datetime) -> bool:
    if record.state is not State.FAILED:
        return False
    due = parse_iso(record.retry_at)
    return due is None or now >= due


def retry(record: TaskRecord, now: datetime, *, automatic: bool) -> TaskRecord:
    """Back to the queue. Automatic retries wait for ``retry_at``; a person may retry at once.

    A person retrying a task that has failed for good grants it one more attempt.
    """
    if not allows(record, "retry"):
        raise InvalidTransition(f"cannot retry {describe(record)}; only failed tasks can be retried")
    if automatic and not retry_due(record, now):
        raise InvalidTransition(f"task {record.task_id} is not due for an automatic retry")
    return move(
        record,
        State.QUEUED,
        now,
        "retry",
        _note="automatic" if automatic else "by request",
        retry_at=None,
        final_reason=None,
        max_attempts=max(record.max_attempts, record.failed_attempts + 1),
        finished_at=None,
        queued_at=to_iso(now),
        worker_id=None,
    )


def cancel(record: TaskRecord, now: datetime, *, by: str, seen: Progress | None = None, attempt: int = 0) -> TaskRecord:
    """Cancel a task. ``seen``: the live counts of its running ``attempt`` as the canceller saw them
    (s3task.live), kept in the cancelled record, which would otherwise say only what the last
    heartbeat did; ignored unless the record still says that attempt is running and they are newer."""
    counts: dict[str, Any] = {}
    if (
        seen is not None
        and record.status == Status.RUNNING
        and record.attempt_id == attempt
        and seen.bytes_processed >= record.bytes_processed
        and seen.processed_count >= record.processed_count
    ):
        counts = seen.running_counters()
    return move(
        record,
        State.ABANDONED,
        now,
        "cancel",
        _note=f"cancelled by {by}",
        finished_at=to_iso(now),
        lease_token=None,
        lease_expires_at=None,
        retry_at=None,
        **counts,
    )
