"""One attempt, seen from the worker: supervise the child, renew the lease, finish.

The worker process is the only writer of the task record. Every write
re-reads the record and re-checks ownership (status, attempt, lease token)
inside the compare-and-set loop, so a cancel, an expiry or another worker's
claim always wins over this attempt's stale view.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .. import lifecycle, live, markers
from ..config import Settings
from ..errors import MarkerLost, NotOwner, S3TaskError, StoreError, TooManyConflicts
from ..lifecycle import Lease
from ..progress import Done, Failed, Progress
from ..record import TaskRecord
from ..records import Change, Records
from ..states import Status
from . import child, limits
from .forkserver import TaskProcess, fork_server_ready
from .leftovers import drop_partial_output

log = logging.getLogger("s3task.worker")

#: How long the supervision loop waits for the child's messages before it looks at the clock again.
TICK = 0.2


@dataclass
class Outcome:
    kind: Literal["completed", "failed", "released", "lost"]
    detail: str = ""
    final: bool = False  # failed for good (no retry): counted apart in s3task.metrics


class Attempt:
    def __init__(
        self,
        records: Records,
        settings: Settings,
        record: TaskRecord,
        lease: Lease,
        stop: threading.Event,
        on_marker_lost: Callable[[str], None] = lambda _task_id: None,
        etag: str | None = None,
    ) -> None:
        self.records, self.settings = records, settings
        self.store, self.layout = records.store, records.layout
        #: The record as this attempt last wrote it (the claim, then each write) and its ETag: the next
        #: write is conditional on it instead of reading first. Anyone else's write in between (a cancel)
        #: fails the condition, and the change is then decided on the record as it is.
        self._known: tuple[TaskRecord, str] | None = None if etag is None else (record, etag)
        self._on_marker_lost = on_marker_lost
        self.record, self.lease, self.stop = record, lease, stop
        self.task_id = record.task_id
        self.progress = Progress()
        #: Saves the counts for readers every few seconds, and notices a cancel (s3task.live).
        self.live = live.Publisher(self.store, self.layout, self.task_id, lease.attempt_id)
        #: Set by the worker's poll when it saw this task cancelled or its marker gone: re-read the record now.
        self._doubt = threading.Event()
        self._proc: TaskProcess | None = None
        self._child_ended = False  # the child said it is done (or failed): it cleaned up after itself
        self._renewed = False
        #: When the lease was last known to be renewed (monotonic): the claim, then each heartbeat.
        self._renewed_at = time.monotonic()

    # --- the supervision loop -------------------------------------------------

    def run(self) -> Outcome:
        """Supervise the attempt to its end; whatever goes wrong, the attempt ends through the lifecycle."""
        try:
            return self._supervise()
        except Exception as e:  # a bug or an unforeseen error after the claim: never leave it `running`
            log.exception("attempt on %s hit an unexpected error", self.task_id, extra={"task_id": self.task_id})
            return self._end_after(e)

    def _end_after(self, error: Exception) -> Outcome:
        """Release (when stopping) or fail the attempt after an unexpected error; retried like any failure."""
        try:
            if self.stop.is_set():
                return self._release()
            return self._fail(f"the worker hit an unexpected error: {type(error).__name__}: {error}", False)
        except Exception:  # even that failed: the lease expiry hands the task on, as after a crash
            log.exception("could not end the attempt on %s; its lease expiry will", self.task_id)
            return Outcome("lost", str(error))

    def _wait_for_fork_server(self) -> Outcome | None:
        """While the fork server is still loading (a worker's first second or so), keep the lease.

        A worker claims before its fork server is ready; the lease is renewed as in :meth:`_supervise`
        meanwhile, so a short lease does not run out before the task's process can start. A cancel is
        noticed as there; a server not ready within ``stall_timeout`` fails the attempt (retried later).
        """
        interval = self.settings.lease_seconds / 3
        last_renewal = self._renewed_at  # the claim
        next_beat, deadline = last_renewal + interval, time.monotonic() + self.settings.stall_timeout
        while not fork_server_ready(TICK):
            if self.stop.is_set():
                return self._release()
            if (outcome := self._doubted()) is not None:
                return outcome
            now = time.monotonic()
            if now >= deadline:
                wait = self.settings.stall_timeout
                return self._fail(f"the worker's process for tasks was not ready after {wait:.0f} seconds", False)
            if now >= next_beat:
                next_beat = now + interval
                outcome, last_renewal = self._renew(now, last_renewal)
                if outcome is not None:
                    return outcome
        return None

    def _renew(self, now: float, last_renewal: float) -> tuple[Outcome | None, float]:
        """A heartbeat; the outcome that ends the attempt (or None) and when the lease was last renewed."""
        outcome = self._heartbeat(now, last_renewal)
        if self._renewed:
            last_renewal = now
        self._renewed_at = last_renewal
        return outcome, last_renewal

    def _supervise(self) -> Outcome:
        outcome = self._wait_for_fork_server()
        if outcome is not None:
            return outcome
        proc = self._start_child()
        interval = self.settings.lease_seconds / 3
        started = last_move = time.monotonic()
        last_renewal = self._renewed_at  # the claim, or a renewal while the fork server loaded
        next_beat = last_renewal + interval
        next_live = started + live.LIVE_SECONDS
        moved_bytes = -1
        max_runtime = limits.max_runtime(self.record.task_type)
        result: Done | Failed | None = None
        try:
            while result is None:
                result = self._receive(proc)
                now = time.monotonic()
                if self.progress.bytes_processed != moved_bytes:
                    moved_bytes, last_move = self.progress.bytes_processed, now
                if result is not None:
                    break
                if not proc.alive():
                    result = self._receive(proc) or Failed(proc.crash_message(), permanent=False)
                    break
                if self.stop.is_set():
                    return self._release()
                broken = limits.broken(self.settings, proc, now - last_move, now - started, max_runtime)
                if broken:
                    return self._fail(broken, False)
                if (outcome := self._doubted()) is not None:
                    return outcome
                if now >= next_live:  # on a steady beat (not drifting by a tick each time), unless far behind
                    next_live += live.LIVE_SECONDS
                    next_live = next_live if next_live > now else now + live.LIVE_SECONDS
                    outcome = self._save_live()
                    if outcome is not None:
                        return outcome
                if now >= next_beat:
                    next_beat = now + interval
                    outcome, last_renewal = self._renew(now, last_renewal)
                    if outcome is not None:
                        return outcome
        finally:
            self._kill_child()
            proc.close()
            if not self._child_ended:  # killed or crashed mid-write: its own clean-up never ran
                drop_partial_output(self.store, self.layout.output_key(self.task_id, self.lease.attempt_id))
        return self._finish(result)

    def _start_child(self) -> TaskProcess:
        job = child.Job(
            store_url=self.settings.store,
            handler_modules=tuple(self.settings.handlers),
            task_id=self.task_id,
            task_type=self.record.task_type,
            params=dict(self.record.payload),
            input_key=self.record.input_object_path,
            input_etag=self.record.input_etag or "",
            output_key=self.layout.output_key(self.task_id, self.lease.attempt_id),
            write_id=secrets.token_hex(8),
            input_format=self.record.input_format,
            input_size=self.record.input_size_bytes or 0,
            memory_mb=self.settings.max_child_memory_mb or 0,
        )
        self._proc = TaskProcess(job)
        return self._proc

    def _receive(self, proc: TaskProcess) -> Done | Failed | None:
        """Take in the progress messages; return the final message if one came."""
        progress, final = proc.receive(TICK)
        if progress is not None:
            self.progress = progress
        if isinstance(final, Failed) and final.progress is not None:
            self.progress = final.progress  # the counts since the last message (rows read before a bad row)
        self._child_ended = final is not None
        return final

    def _kill_child(self) -> None:
        if self._proc is not None:
            self._proc.kill()

    # --- writes to the record ------------------------------------------------

    def _write(self, change: Change) -> TaskRecord:
        known, self._known = self._known, None  # used once: a failed write leaves it unknown
        written = self.records.write(self.task_id, change, first=known)
        if written.etag is not None:
            self._known = (written.record, written.etag)
        return written.record

    def _write_final(self, change: Change) -> TaskRecord:
        """Complete, fail or release: retried through store errors for as long as the lease may be ours.

        Giving up at the first 503 would throw away a finished attempt: the
        task would sit ``running`` until its lease expired, then be charged a
        failed attempt and processed again. Past the lease minus a margin
        another worker may have taken over, so the error is raised (and the
        outcome is "lost": the lease expiry hands the task on).
        """
        deadline = self._renewed_at + self.settings.lease_seconds - self._margin()
        pause = 0.05
        while True:
            try:
                return self._write(change)
            except (StoreError, TooManyConflicts) as e:
                if time.monotonic() + pause >= deadline:
                    raise
                log.warning("writing %s failed, trying again: %s", self.task_id, e, extra={"task_id": self.task_id})
                time.sleep(pause)
                pause = min(2.0, pause * 2)

    def _margin(self) -> float:
        return max(2.0, self.settings.lease_seconds / 6)

    def doubt(self) -> None:
        """The worker's poll saw this task cancelled (or its marker gone): check ownership at the next tick.

        This is how a cancel is noticed while the counts stand still, when no
        progress save would fail its condition: the poll reads the record
        anyway, so it costs no request of its own.
        """
        self._doubt.set()

    def _doubted(self) -> Outcome | None:
        """After :meth:`doubt`: re-read the record, and end the attempt if the task is no longer ours."""
        if not self._doubt.is_set():
            return None
        self._doubt.clear()
        return self._recheck()

    def _save_live(self) -> Outcome | None:
        """Save the counts for readers, if they moved.

        When someone else wrote the progress object (a cancel, as a rule), re-read
        the record: a worker that no longer owns the task kills the attempt's
        process and writes nothing more; its partial output is left as it is.
        """
        if self.live.save(self.progress):
            return None
        return self._recheck(adopt=True)

    def _recheck(self, *, adopt: bool = False) -> Outcome | None:
        """Re-read the record: stop the attempt (no write, nothing dropped) if the task is no longer ours.

        ``adopt``: when it still is, the progress object there is our own write whose answer was lost.
        """
        try:
            record, _ = self.records.read(self.task_id)
            lifecycle.check_owner(record, self.lease)
        except NotOwner as e:
            self._kill_child()
            why = "it was cancelled" if record.status == Status.ABANDONED else str(e)
            log.warning("stopped %s: %s", self.task_id, why, extra=self._extra("lost"))
            return Outcome("lost", why)
        except S3TaskError as e:  # cannot tell now: the next save, poll or heartbeat asks again
            log.warning("could not re-read %s: %s", self.task_id, e, extra={"task_id": self.task_id})
        else:
            if adopt:
                self.live.adopt()
        return None

    def _heartbeat(self, now: float, last_renewal: float) -> Outcome | None:
        self._renewed = False
        try:
            self._write(
                lambda r, t: lifecycle.heartbeat(
                    r, t, lease=self.lease, lease_seconds=self.settings.lease_seconds, progress=self.progress
                )
            )
            self._renewed = True
            done = self.progress
            log.info(
                "progress %s: %d rows, %d bytes", self.task_id, done.processed_count, done.bytes_processed,
                extra=self._extra("progress"),
            )  # fmt: skip
        except NotOwner as e:
            if (stopped := self._recheck()) is not None:  # why, read fresh: "it was cancelled", as a poll says
                return stopped
            log.warning("lost lease on %s: %s", self.task_id, e, extra=self._extra("lost"))
            return Outcome("lost", str(e))
        except S3TaskError as e:
            # Keep trying while the lease may still be ours; past lease minus a
            # margin another worker may have taken over, so stop writing.
            if now - last_renewal > self.settings.lease_seconds - self._margin():
                why = "renewals failed for too long"
                log.warning("giving up %s: %s (%s)", self.task_id, why, e, extra=self._extra("lost"))
                return Outcome("lost", f"renewals failed: {e}")
            log.warning("heartbeat failed for %s: %s", self.task_id, e, extra={"task_id": self.task_id})
        return None

    def _finish(self, result: Done | Failed) -> Outcome:
        if isinstance(result, Failed):
            return self._fail(result.message, result.permanent)
        output_key = self.layout.output_key(self.task_id, self.lease.attempt_id)
        done = self.progress
        ended = self._end(
            "complete",
            lambda r, t: lifecycle.complete(
                r, t, lease=self.lease, output_path=output_key, progress=done, row_count=done.row_count
            ),
        )
        if isinstance(ended, Outcome):
            return ended
        self._drop_marker()
        log.info(
            "completed %s: %d rows in, %d out, %d errors", self.task_id, done.processed_count, done.row_count,
            done.error_count, extra=self._extra("completed"),
        )  # fmt: skip
        return Outcome("completed")

    def _fail(self, error: str, permanent: bool) -> Outcome:
        self._kill_child()
        backoff = self.settings.retry_backoff_seconds
        record = self._end(
            "fail",
            lambda r, t: lifecycle.fail(
                r, t, lease=self.lease, error=error, permanent=permanent, progress=self.progress, backoff_base=backoff
            ),
        )
        if isinstance(record, Outcome):
            return record
        if record.final:
            self._drop_marker()
        log.warning(
            "failed %s (attempt %d%s): %s",
            self.task_id,
            self.lease.attempt_id,
            ", final" if record.final else f", retry at {record.retry_at}",
            error,
            extra=self._extra("failed"),
        )
        return Outcome("failed", error, final=record.final)

    def _release(self) -> Outcome:
        self._kill_child()
        record = self._end("release", lambda r, t: lifecycle.release(r, t, lease=self.lease))
        if isinstance(record, Outcome):
            return record
        log.info("released %s back to the queue", self.task_id, extra=self._extra("released"))
        if record.is_terminal:
            self._drop_marker()
        return Outcome("released")

    def _end(self, action: str, change: Change) -> TaskRecord | Outcome:
        """Write the attempt's end (``action``: complete, fail, release): the record as written, or, when it
        could not be written, the outcome: lost (no longer ours, or the store failed us past the lease)."""
        try:
            return self._write_final(change)
        except NotOwner as e:
            if action == "complete":
                log.warning("finished %s but no longer own it: %s", self.task_id, e, extra=self._extra("lost"))
            return Outcome("lost", str(e))
        except S3TaskError as e:
            return self._gave_up(action, e)

    def _extra(self, event: str) -> dict[str, str]:
        return {"task_id": self.task_id, "event": event}

    def _gave_up(self, action: str, error: S3TaskError) -> Outcome:
        log.warning(
            "could not %s %s before the lease ran out (%s); its expiry hands the task on", action, self.task_id, error,
            extra=self._extra("lost"),
        )  # fmt: skip
        return Outcome("lost", f"could not {action}: {error}")

    def _drop_marker(self) -> None:
        try:
            markers.drop(self.store, self.layout, self.task_id)
        except MarkerLost:  # the task came back to life and its marker could not be put back
            self._on_marker_lost(self.task_id)
        except S3TaskError as e:  # harmless: the next poll removes a stale marker
            log.warning("could not remove marker of %s: %s", self.task_id, e)
