"""The transitions of a task a worker holds, each checking on the fresh record that the worker still holds it:
claim, heartbeat, release, complete, fail; and the expiry of a lease whose worker stopped beating."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..errors import InvalidTransition, NotOwner
from ..progress import Progress
from ..record import TaskRecord, parse_iso, to_iso
from ..states import State, Status
from .table import describe, move

MAX_RELEASES = 10
BACKOFF_BASE_SECONDS = 10.0
BACKOFF_MAX_SECONDS = 600.0


@dataclass(frozen=True)
class Lease:
    """What a worker holds while it owns a task."""

    attempt_id: int
    lease_token: str
    worker_id: str


def check_owner(record: TaskRecord, lease: Lease) -> None:
    """Ownership is three facts on the fresh record, checked on every worker write."""
    if (
        record.status != Status.RUNNING
        or record.attempt_id != lease.attempt_id
        or record.lease_token != lease.lease_token
    ):
        raise NotOwner(f"worker {lease.worker_id} no longer owns task {record.task_id} ({record.status})")


def claim(
    record: TaskRecord, now: datetime, *, worker_id: str, lease_seconds: float, max_attempts: int | None = None
) -> tuple[TaskRecord, Lease]:
    """Take the task; ``attempt_id`` grows by one and fences every earlier holder.

    ``max_attempts`` (the claiming worker's setting) replaces the record's cap.
    """
    if record.status != Status.QUEUED:
        raise InvalidTransition(f"cannot claim {describe(record)}")
    lease = Lease(record.attempt_id + 1, secrets.token_hex(12), worker_id)
    new = move(
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
    return move(
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
    return move(
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
    return move(
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
    return move(
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
