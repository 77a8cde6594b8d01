"""The attempts a worker has in hand: claim queued tasks into its free slots, start each attempt on a
thread of its own, and let go of it when it ends.

A claim is one conditional write on the record just read: if someone else wrote in between, they
won, and losing is a debug line (arq's ``start_jobs``). Candidates come oldest first; a worker picks
at random among the first few, so that workers do not all race for the same task.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import lifecycle, metrics
from ..config import Settings
from ..errors import InvalidTransition, S3TaskError
from ..lifecycle import Lease
from ..progress import Progress
from ..record import TaskRecord
from ..records import Records
from .attempt import Attempt
from .presence import Presence

log = logging.getLogger("s3task.worker")

#: Claim among the oldest few at random, so workers don't all race for one task.
SPREAD = 3


class Claims:
    def __init__(
        self,
        records: Records,
        settings: Settings,
        presence: Presence,
        *,
        stop: threading.Event,
        wake: threading.Event,
        prove: Callable[[], None],
        on_marker_lost: Callable[[str], None],
    ) -> None:
        """``stop``: no more claims (and running attempts release their tasks); ``wake``: set when an
        attempt ends (its slot is free); ``prove``: refuses a store that ignores conditional writes."""
        self.records, self.settings, self.presence = records, settings, presence
        self.stop, self.wake, self.prove, self.on_marker_lost = stop, wake, prove, on_marker_lost
        self._slots = threading.Semaphore(max(1, settings.concurrency))
        self._running: dict[str, threading.Thread] = {}
        self._attempts: dict[str, Attempt] = {}
        self._lock = threading.Lock()

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._running)

    def holds(self, task_id: str) -> bool:
        with self._lock:
            return task_id in self._running

    def attempts(self) -> dict[str, Attempt]:
        with self._lock:
            return dict(self._attempts)

    def join(self, deadline: float | None) -> None:
        """Wait for the running attempts to end (until ``deadline``, monotonic seconds; None: however long)."""
        with self._lock:
            running = list(self._running.values())
        for thread in running:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def take(self, candidates: list[tuple[TaskRecord, str]]) -> int:
        """Claim and start what free slots allow from ``candidates`` (oldest first); the number started."""
        started = 0
        while candidates and not self.stop.is_set():
            self.prove()  # no claim ever on a store that ignores conditions
            if not self._slots.acquire(blocking=False):
                break
            record, etag = candidates.pop(random.randrange(min(SPREAD, len(candidates))))
            try:
                claimed = self._claim(record, etag)
            except Exception:  # e.g. an OSError from a local disk: give the slot back, try the others
                log.exception("could not claim %s", record.task_id, extra={"task_id": record.task_id})
                claimed = None
            if claimed is None:
                self._slots.release()
                continue
            try:
                self._start(*claimed)
            except Exception as e:  # claimed but not started: end the attempt now, not at its lease's expiry
                log.exception("could not start the attempt on %s", record.task_id, extra={"task_id": record.task_id})
                self._let_go(record.task_id)
                self._fail_unstarted(claimed[0], claimed[1], e)
                continue
            started += 1
        return started

    def _claim(self, record: TaskRecord, etag: str) -> tuple[TaskRecord, Lease, str | None] | None:
        def change(current: TaskRecord, now: Any) -> TaskRecord:
            return lifecycle.claim(
                current,
                now,
                worker_id=self.settings.worker_id,
                lease_seconds=self.settings.lease_seconds,
                max_attempts=self.settings.max_attempts,
            )[0]

        try:
            # One try only: if someone else wrote in between, they won.
            written = self.records.write(record.task_id, change, tries=1, first=(record, etag))
        except (InvalidTransition, S3TaskError) as e:
            log.debug("lost the claim on %s: %s", record.task_id, e)
            return None
        new = written.record
        log.info(
            "claimed %s (attempt %d, %s)", new.task_id, new.attempt_id, new.task_type,
            extra={"task_id": new.task_id, "event": "claimed"},
        )  # fmt: skip
        metrics.claimed(new.task_type)
        return new, lifecycle.lease_of(new), written.etag

    def _fail_unstarted(self, record: TaskRecord, lease: Lease, error: Exception) -> None:
        """A failed attempt (retried with backoff, so a bug that repeats ends in a final failure, not a loop)."""

        def change(current: TaskRecord, now: Any) -> TaskRecord:
            return lifecycle.fail(
                current,
                now,
                lease=lease,
                error=f"the worker could not start the attempt: {type(error).__name__}: {error}",
                permanent=False,
                progress=Progress(),
                backoff_base=self.settings.retry_backoff_seconds,
            )

        try:
            self.records.update(record.task_id, change)
        except Exception as e:  # the lease expiry hands it on instead
            log.error("could not end the attempt on %s: %s", record.task_id, e, extra={"task_id": record.task_id})

    def _start(self, record: TaskRecord, lease: Lease, etag: str | None = None) -> None:
        attempt = Attempt(
            self.records, self.settings, record, lease, self.stop, on_marker_lost=self.on_marker_lost, etag=etag
        )

        def body() -> None:
            started = time.monotonic()
            try:
                outcome = attempt.run()  # ends the attempt through the lifecycle, whatever happens inside
                seconds, rows = time.monotonic() - started, attempt.progress.processed_count
                metrics.attempt_ended(record.task_type, outcome.kind, seconds, rows, final=outcome.final)
            except Exception as e:  # not even a bug in run() may take the worker down
                log.exception("attempt on %s crashed in the worker: %s", record.task_id, e)
            finally:
                self._let_go(record.task_id)
                self.wake.set()

        thread = threading.Thread(target=body, name=f"attempt-{record.task_id}", daemon=True)
        with self._lock:
            # Started under the lock that publishes it: a stop draining the running attempts (another
            # thread) never finds one that is listed but not started, which it could not join.
            self._running[record.task_id] = thread
            self._attempts[record.task_id] = attempt
            thread.start()
        self.presence.beat(self.ids(), force=True)

    def _let_go(self, task_id: str) -> None:
        """Free the slot of an attempt that ended (or never started)."""
        self._slots.release()
        with self._lock:
            self._running.pop(task_id, None)
            self._attempts.pop(task_id, None)
