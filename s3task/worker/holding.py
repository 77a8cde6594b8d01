"""A task as its worker holds it: the lease renewed, each record write conditional on the worker's own last
one, ownership read again when in doubt, and the attempt's end written while the lease may still be ours.

The worker process is the only writer of the task record while it holds the task. Every write is a
compare-and-set that re-checks ownership (status, attempt, lease token) on the record it applies to, so a
cancel, an expiry or another worker's claim always wins over this worker's stale view. What the attempt
does with the rows (its child process, its limits) is :mod:`s3task.worker.attempt`'s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .. import lifecycle, live
from ..config import Settings
from ..errors import NotOwner, S3TaskError, StoreError, TooManyConflicts
from ..lifecycle import Lease
from ..progress import Progress
from ..record import TaskRecord
from ..records import Change, Records
from ..states import Status

log = logging.getLogger("s3task.worker")


@dataclass
class AttemptOutcome:
    """How an attempt ended, for the worker's loop and its metrics."""

    kind: Literal["completed", "failed", "released", "lost"]
    detail: str = ""
    final: bool = False  # failed for good (no retry): counted apart in s3task.metrics


class Holding:
    """The task ``record`` held under ``lease`` (``etag``: the record's as the claim wrote it).
    ``on_lost``: called when the task turns out to be no longer ours (the attempt stops its process)."""

    def __init__(
        self,
        records: Records,
        settings: Settings,
        record: TaskRecord,
        lease: Lease,
        etag: str | None,
        on_lost: Callable[[], None],
    ) -> None:
        self.records, self.settings, self.lease = records, settings, lease
        self.task_id = record.task_id
        #: The record as this worker last wrote it (the claim, then each write) and its ETag: the next
        #: write is conditional on it instead of reading first. Anyone else's write in between (a cancel)
        #: fails the condition, and the change is then decided on the record as it is.
        self._known: tuple[TaskRecord, str] | None = None if etag is None else (record, etag)
        self._on_lost = on_lost
        #: Saves the counts for readers every few seconds, and notices a cancel (s3task.live).
        self.live = live.Publisher(records.store, records.layout, self.task_id, lease.attempt_id)
        #: Set by the worker's poll when it saw this task cancelled or its marker gone: re-read the record now.
        self._doubt = threading.Event()
        self._renewed = False
        #: When the lease was last known to be renewed (monotonic): the claim, then each heartbeat.
        self.renewed_at = time.monotonic()

    def extra(self, event: str) -> dict[str, str]:
        """A log record's fields for this task and ``event``."""
        return {"task_id": self.task_id, "event": event}

    # --- the lease --------------------------------------------------------------------------------------------

    def renew(self, now: float, last_renewal: float, progress: Progress) -> tuple[AttemptOutcome | None, float]:
        """A heartbeat; the outcome that ends the attempt (or None) and when the lease was last renewed."""
        outcome = self._heartbeat(now, last_renewal, progress)
        if self._renewed:
            last_renewal = now
        self.renewed_at = last_renewal
        return outcome, last_renewal

    def _heartbeat(self, now: float, last_renewal: float, progress: Progress) -> AttemptOutcome | None:
        self._renewed = False
        seconds = self.settings.lease_seconds
        try:
            self.write(
                lambda r, t: lifecycle.heartbeat(r, t, lease=self.lease, lease_seconds=seconds, progress=progress)
            )
            self._renewed = True
            log.info(
                "progress %s: %d rows, %d bytes", self.task_id, progress.processed_count, progress.bytes_processed,
                extra=self.extra("progress"),
            )  # fmt: skip
        except NotOwner as e:
            if (stopped := self.recheck()) is not None:  # why, read fresh: "it was cancelled", as a poll says
                return stopped
            log.warning("lost lease on %s: %s", self.task_id, e, extra=self.extra("lost"))
            return AttemptOutcome("lost", str(e))
        except S3TaskError as e:
            # Keep trying while the lease may still be ours; past lease minus a
            # margin another worker may have taken over, so stop writing.
            if now - last_renewal > self.settings.lease_seconds - self._margin():
                why = "renewals failed for too long"
                log.warning("giving up %s: %s (%s)", self.task_id, why, e, extra=self.extra("lost"))
                return AttemptOutcome("lost", f"renewals failed: {e}")
            log.warning("heartbeat failed for %s: %s", self.task_id, e, extra={"task_id": self.task_id})
        return None

    def _margin(self) -> float:
        return max(2.0, self.settings.lease_seconds / 6)

    # --- is it still ours? --------------------------------------------------------------------------------------

    def doubt(self) -> None:
        """The worker's poll saw this task cancelled (or its marker gone): check ownership at the next tick.

        This is how a cancel is noticed while the counts stand still, when no
        progress save would fail its condition: the poll reads the record
        anyway, so it costs no request of its own.
        """
        self._doubt.set()

    def doubted(self) -> AttemptOutcome | None:
        """After :meth:`doubt`: re-read the record, and end the attempt if the task is no longer ours."""
        if not self._doubt.is_set():
            return None
        self._doubt.clear()
        return self.recheck()

    def save_live(self, progress: Progress) -> AttemptOutcome | None:
        """Save the counts for readers, if they moved.

        When someone else wrote the progress object (a cancel, as a rule), re-read
        the record: a worker that no longer owns the task stops the attempt's
        process and writes nothing more; its partial output is left as it is.
        """
        if self.live.save(progress):
            return None
        return self.recheck(adopt=True)

    def recheck(self, *, adopt: bool = False) -> AttemptOutcome | None:
        """Re-read the record: stop the attempt (no write, nothing dropped) if the task is no longer ours.

        ``adopt``: when it still is, the progress object there is our own write whose answer was lost.
        """
        try:
            record, _ = self.records.read(self.task_id)
            lifecycle.check_owner(record, self.lease)
        except NotOwner as e:
            self._on_lost()
            why = "it was cancelled" if record.status == Status.ABANDONED else str(e)
            log.warning("stopped %s: %s", self.task_id, why, extra=self.extra("lost"))
            return AttemptOutcome("lost", why)
        except S3TaskError as e:  # cannot tell now: the next save, poll or heartbeat asks again
            log.warning("could not re-read %s: %s", self.task_id, e, extra={"task_id": self.task_id})
        else:
            if adopt:
                self.live.adopt()
        return None

    # --- writes to the record -----------------------------------------------------------------------------------

    def write(self, change: Change) -> TaskRecord:
        """One conditional write of ``change``, on the record as this worker last wrote it."""
        known, self._known = self._known, None  # used once: a failed write leaves it unknown
        written = self.records.write(self.task_id, change, first=known)
        if written.etag is not None:
            self._known = (written.record, written.etag)
        return written.record

    def end(self, action: str, change: Change) -> TaskRecord | AttemptOutcome:
        """Write the attempt's end (``action``: complete, fail, release): the record as written, or, when it
        could not be written, the outcome: lost (no longer ours, or the store failed us past the lease)."""
        try:
            return self._write_final(change)
        except NotOwner as e:
            if action == "complete":
                log.warning("finished %s but no longer own it: %s", self.task_id, e, extra=self.extra("lost"))
            return AttemptOutcome("lost", str(e))
        except S3TaskError as e:
            log.warning(
                "could not %s %s before the lease ran out (%s); its expiry hands the task on", action, self.task_id, e,
                extra=self.extra("lost"),
            )  # fmt: skip
            return AttemptOutcome("lost", f"could not {action}: {e}")

    def _write_final(self, change: Change) -> TaskRecord:
        """Complete, fail or release: retried through store errors for as long as the lease may be ours.

        Giving up at the first 503 would throw away a finished attempt: the
        task would sit ``running`` until its lease expired, then be charged a
        failed attempt and processed again. Past the lease minus a margin
        another worker may have taken over, so the error is raised (and the
        outcome is "lost": the lease expiry hands the task on).
        """
        deadline = self.renewed_at + self.settings.lease_seconds - self._margin()
        pause = 0.05
        while True:
            try:
                return self.write(change)
            except (StoreError, TooManyConflicts) as e:
                if time.monotonic() + pause >= deadline:
                    raise
                log.warning("writing %s failed, trying again: %s", self.task_id, e, extra={"task_id": self.task_id})
                time.sleep(pause)
                pause = min(2.0, pause * 2)
