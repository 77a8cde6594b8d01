"""Task states and the allowed transitions, as data plus pure functions.

```
created  --upload-->  created                      (what continues its upload noted: file, upload id)
created  --submit-->  queued  --claim-->  running  --complete-->  completed
running  --heartbeat-->  running                    (same owner only)
running  --release-->  queued                       (graceful stop; no failed attempt charged)
running  --fail / expire-->  failed                 (a failed attempt)
failed   --retry-->  queued                         (automatic after retry_at while not final;
                                                     an operator or the creator may retry any
                                                     failed task, which grants one more attempt)
running  --fail-->  failed for good               (attempts used up, or bad input)
failed for good  --retry by a person-->  queued     (one more attempt)
created|queued|running|failed  --cancel-->  abandoned
completed  --correct-->  completed                 (a task made of its corrected rows is listed on it)
```

``completed``, ``abandoned`` and failed for good (``failed`` with ``final``)
are terminal; the states are :class:`s3task.states.State`, derived from the
record, and :data:`TRANSITIONS` is the one table of what may follow what.
Every function here takes a record and the store's current time and returns
the next record (a new object) or raises :class:`InvalidTransition` with a
sentence a user can act on. They never touch the store: the caller writes
the result with a compare-and-set (:func:`s3task.records.update_record`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .errors import InvalidTransition, NotOwner
from .progress import Progress
from .record import HISTORY_LIMIT, MAX_CORRECTIONS, TaskRecord, new_write_id, parse_iso, to_iso
from .states import State, Status

__all__ = ["TRANSITIONS", "Lease", "Progress", "State", "Status"]  # Status: re-exported for callers


#: The one table of allowed transitions: (from, to) -> action. "Failed for good" is a state of its
#: own (derived from ``failed`` + ``final``): it is terminal, and only a person's retry leaves it.
TRANSITIONS: dict[tuple[State, State], str] = {
    (State.CREATED, State.CREATED): "upload",
    (State.CREATED, State.QUEUED): "submit",
    (State.QUEUED, State.RUNNING): "claim",
    (State.RUNNING, State.RUNNING): "heartbeat",
    (State.RUNNING, State.QUEUED): "release",
    (State.RUNNING, State.COMPLETED): "complete",
    (State.RUNNING, State.FAILED): "fail",
    (State.RUNNING, State.FAILED_FOR_GOOD): "fail",
    (State.FAILED, State.QUEUED): "retry",
    (State.FAILED_FOR_GOOD, State.QUEUED): "retry",
    (State.CREATED, State.ABANDONED): "cancel",
    (State.QUEUED, State.ABANDONED): "cancel",
    (State.RUNNING, State.ABANDONED): "cancel",
    (State.FAILED, State.ABANDONED): "cancel",
    (State.COMPLETED, State.COMPLETED): "correct",
}

MAX_RELEASES = 10
BACKOFF_BASE_SECONDS = 10.0
BACKOFF_MAX_SECONDS = 600.0

_WHAT_NEXT = {
    State.CREATED: "it can be submitted or cancelled",
    State.QUEUED: "it is waiting for a worker; it can be cancelled",
    State.RUNNING: "a worker is processing it; it can be cancelled",
    State.COMPLETED: "it is finished; its output can be downloaded",
    State.FAILED: "it can be retried or cancelled",
    State.FAILED_FOR_GOOD: "a retry gives it one more attempt",
    State.ABANDONED: "nothing more can be done with it",
}
#: A state in the words of a sentence, where its value is not the word ("abandoned": the task was cancelled).
_IS = {State.FAILED_FOR_GOOD: "has failed for good", State.ABANDONED: "is cancelled"}


@dataclass(frozen=True)
class Lease:
    """What a worker holds while it owns a task."""

    attempt_id: int
    lease_token: str
    worker_id: str


def allows(record: TaskRecord, action: str) -> bool:
    """Does the table allow ``action`` (``"cancel"``, ``"retry"``…) from the record's state?"""
    return any(name == action and source is record.state for (source, _), name in TRANSITIONS.items())


def describe(record: TaskRecord) -> str:
    state = record.state
    return f"task {record.task_id} {_IS.get(state, f'is {state.value}')}; {_WHAT_NEXT[state]}"


def _move(record: TaskRecord, target: State, now: datetime, event: str, **changes: Any) -> TaskRecord:
    """The only place a record changes state: checks the table, stamps the write.

    The table is checked for the action too, not just for (from, to): ``submit``
    of a running task must not pass as a ``release`` (both are running → queued).
    """
    if TRANSITIONS.get((record.state, target)) != event:
        raise InvalidTransition(f"cannot {event} {describe(record)}")
    stamp = to_iso(now)
    entry = {"at": stamp, "event": event, "attempt": changes.get("attempt_id", record.attempt_id)}
    note = changes.pop("_note", None)
    if note:
        entry["note"] = note[:500]
    # No history entry for what is no step of the task's own (a correction's record is its corrections list).
    history = record.history if event in ("heartbeat", "correct") else [*record.history, entry][-HISTORY_LIMIT:]
    return record.replace(
        status=target.status,
        final=target.final,
        revision=record.revision + 1,
        write_id=new_write_id(),
        updated_at=stamp,
        history=history,
        **changes,
    )


def check_owner(record: TaskRecord, lease: Lease) -> None:
    """Ownership is three facts on the fresh record, checked on every worker write."""
    if (
        record.status != Status.RUNNING
        or record.attempt_id != lease.attempt_id
        or record.lease_token != lease.lease_token
    ):
        raise NotOwner(f"worker {lease.worker_id} no longer owns task {record.task_id} ({record.status})")


# --- transitions ---------------------------------------------------------------


def note_upload(record: TaskRecord, now: datetime, *, upload: dict[str, Any],
                fingerprint: dict[str, Any] | None = None, note: str = "") -> TaskRecord:  # fmt: skip
    """Note on a task still waiting for its file how its upload goes on: ``upload`` ({"upload_id",
    "part_size"}, and "resend": the parts held that must go again; {} when a new one is to start) and, if
    given, the ``fingerprint`` of the file it is of (s3task.fingerprint); ``note``: why, in the history. A
    task already submitted or cancelled is refused, its upload long over."""
    changes: dict[str, Any] = {"input_upload": dict(upload), "_note": note}
    if fingerprint is not None:
        changes["input_fingerprint"] = dict(fingerprint)
    return _move(record, State.CREATED, now, "upload", **changes)


def submit(record: TaskRecord, now: datetime, *, input_etag: str, input_size: int) -> TaskRecord:
    return _move(
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
    return _move(record, State.COMPLETED, now, "correct", corrections=[*record.corrections, correction_id])


def claim(
    record: TaskRecord, now: datetime, *, worker_id: str, lease_seconds: float, max_attempts: int | None = None
) -> tuple[TaskRecord, Lease]:
    """Take the task; ``attempt_id`` grows by one and fences every earlier holder.

    ``max_attempts`` (the claiming worker's setting) replaces the record's cap.
    """
    if record.status != Status.QUEUED:
        raise InvalidTransition(f"cannot claim {describe(record)}")
    lease = Lease(record.attempt_id + 1, secrets.token_hex(12), worker_id)
    new = _move(
        record,
        State.RUNNING,
        now,
        "claim",
        _note=f"worker {worker_id}",
        attempt_id=lease.attempt_id,
        lease_token=lease.lease_token,
        worker_id=worker_id,
        lease_expires_at=to_iso(now + timedelta(seconds=lease_seconds)),
        started_at=to_iso(now),
        processed_count=0,
        success_count=0,
        error_count=0,
        bytes_processed=0,
        row_count=None,
        protected_count=0,
        retry_at=None,
        max_attempts=max_attempts or record.max_attempts,
    )
    return new, lease


def lease_of(record: TaskRecord) -> Lease:
    """The lease held in a running record (as its claim wrote it): its attempt, token and worker."""
    if record.status != Status.RUNNING or not record.lease_token or not record.worker_id:
        raise NotOwner(f"task {record.task_id} is not held by a worker ({record.status})")
    return Lease(record.attempt_id, record.lease_token, record.worker_id)


def heartbeat(
    record: TaskRecord, now: datetime, *, lease: Lease, lease_seconds: float, progress: Progress
) -> TaskRecord:
    check_owner(record, lease)
    return _move(
        record,
        State.RUNNING,
        now,
        "heartbeat",
        lease_expires_at=to_iso(now + timedelta(seconds=lease_seconds)),
        **progress.running_counters(),
    )


def release(record: TaskRecord, now: datetime, *, lease: Lease) -> TaskRecord:
    """Give the task back (worker shutting down). Not a failed attempt, but capped."""
    check_owner(record, lease)
    if record.release_count + 1 >= MAX_RELEASES:
        return _fail(
            record,
            now,
            f"stopped: released by shutting-down workers {record.release_count + 1} times",
            final=True,
        )
    return _move(
        record,
        State.QUEUED,
        now,
        "release",
        _note=f"worker {lease.worker_id} stopped",
        release_count=record.release_count + 1,
        worker_id=None,
        lease_token=None,
        lease_expires_at=None,
        queued_at=to_iso(now),
    )


def complete(
    record: TaskRecord, now: datetime, *, lease: Lease, output_path: str, progress: Progress, row_count: int
) -> TaskRecord:
    check_owner(record, lease)
    return _move(
        record,
        State.COMPLETED,
        now,
        "complete",
        output_object_path=output_path,
        finished_at=to_iso(now),
        lease_token=None,
        lease_expires_at=None,
        last_error=None,
        **{**progress.running_counters(), "row_count": row_count},
    )


def fail(
    record: TaskRecord,
    now: datetime,
    *,
    lease: Lease,
    error: str,
    permanent: bool,
    progress: Progress | None = None,
    backoff_base: float = BACKOFF_BASE_SECONDS,
) -> TaskRecord:
    """The attempt failed: a permanent error (bad input) is final at once."""
    check_owner(record, lease)
    counts = progress.running_counters() if progress else {}
    return _fail(record, now, error, final=permanent, backoff_base=backoff_base, **counts)


def expire(
    record: TaskRecord, now: datetime, *, grace_seconds: float, backoff_base: float = BACKOFF_BASE_SECONDS
) -> TaskRecord | None:
    """A running task whose lease ran out (by the store's clock) is a failed attempt.

    Returns ``None`` when the lease is still live: nothing to do.
    """
    if record.status != Status.RUNNING:
        return None
    expires = parse_iso(record.lease_expires_at)
    if expires is not None and now <= expires + timedelta(seconds=grace_seconds):
        return None
    return _fail(
        record,
        now,
        f"worker {record.worker_id} stopped sending heartbeats; its lease expired at {record.lease_expires_at}",
        final=False,
        backoff_base=backoff_base,
    )


def _fail(
    record: TaskRecord,
    now: datetime,
    error: str,
    *,
    final: bool,
    backoff_base: float = BACKOFF_BASE_SECONDS,
    **changes: Any,
) -> TaskRecord:
    failed = record.failed_attempts + 1
    reason = "input" if final else "attempts" if failed >= record.max_attempts else None
    final = final or failed >= record.max_attempts
    retry_at = None if final else to_iso(now + timedelta(seconds=backoff_seconds(failed, backoff_base)))
    return _move(
        record,
        State.FAILED_FOR_GOOD if final else State.FAILED,
        now,
        "fail",
        _note=error,
        failed_attempts=failed,
        retry_at=retry_at,
        last_error=error[:2000],
        final_reason=reason,
        lease_token=None,
        lease_expires_at=None,
        finished_at=to_iso(now) if final else None,
        **changes,
    )


def backoff_seconds(failed_attempts: int, base: float = BACKOFF_BASE_SECONDS) -> float:
    return float(min(BACKOFF_MAX_SECONDS, base * 2 ** max(0, failed_attempts - 1)))


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
    return _move(
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
    return _move(
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
