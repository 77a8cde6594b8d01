"""One attempt, seen from the worker: start the task's process, supervise it within its limits, and end
the attempt through the lifecycle (completed, failed, released) whatever happens inside.

Holding the task meanwhile — the lease renewed, every record write conditional on the worker's own last
one, ownership read again when in doubt — is :mod:`s3task.worker.holding`'s.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable

from .. import lifecycle, live, markers
from ..config import Settings
from ..errors import MarkerLost, S3TaskError
from ..lifecycle import Lease
from ..progress import Done, Failed, Progress
from ..record import TaskRecord
from ..records import Records
from . import child, limits
from .forkserver import TaskProcess, fork_server_ready
from .holding import AttemptOutcome, Holding
from .leftovers import drop_partial_output

log = logging.getLogger("s3task.worker")

#: How long the supervision loop waits for the child's messages before it looks at the clock again.
TICK = 0.2


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
        self.record, self.lease, self.stop = record, lease, stop
        self.task_id = record.task_id
        self.progress = Progress()
        self._on_marker_lost = on_marker_lost
        #: The lease and the record's writes (the claim's ETag first); a task found no longer ours stops the child.
        self.holding = Holding(records, settings, record, lease, etag, on_lost=self._kill_child)
        self._proc: TaskProcess | None = None
        self._child_ended = False  # the child said it is done (or failed): it cleaned up after itself

    def doubt(self) -> None:
        """The worker's poll saw this task cancelled (or its marker gone): check ownership at the next tick."""
        self.holding.doubt()

    # --- the supervision loop -------------------------------------------------

    def run(self) -> AttemptOutcome:
        """Supervise the attempt to its end; whatever goes wrong, the attempt ends through the lifecycle."""
        try:
            return self._supervise()
        except Exception as e:  # a bug or an unforeseen error after the claim: never leave it `running`
            log.exception("attempt on %s hit an unexpected error", self.task_id, extra={"task_id": self.task_id})
            return self._end_after(e)

    def _end_after(self, error: Exception) -> AttemptOutcome:
        """Release (when stopping) or fail the attempt after an unexpected error; retried like any failure."""
        try:
            if self.stop.is_set():
                return self._release()
            return self._fail(f"the worker hit an unexpected error: {type(error).__name__}: {error}", False)
        except Exception:  # even that failed: the lease expiry hands the task on, as after a crash
            log.exception("could not end the attempt on %s; its lease expiry will", self.task_id)
            return AttemptOutcome("lost", str(error))

    def _wait_for_fork_server(self) -> AttemptOutcome | None:
        """While the fork server is still loading (a worker's first second or so), keep the lease.

        A worker claims before its fork server is ready; the lease is renewed as in :meth:`_supervise`
        meanwhile, so a short lease does not run out before the task's process can start. A cancel is
        noticed as there; a server not ready within ``stall_timeout`` fails the attempt (retried later).
        """
        interval = self.settings.lease_seconds / 3
        last_renewal = self.holding.renewed_at  # the claim
        next_beat, deadline = last_renewal + interval, time.monotonic() + self.settings.stall_timeout
        while not fork_server_ready(TICK):
            if self.stop.is_set():
                return self._release()
            if (outcome := self.holding.doubted()) is not None:
                return outcome
            now = time.monotonic()
            if now >= deadline:
                wait = self.settings.stall_timeout
                return self._fail(f"the worker's process for tasks was not ready after {wait:.0f} seconds", False)
            if now >= next_beat:
                next_beat = now + interval
                outcome, last_renewal = self.holding.renew(now, last_renewal, self.progress)
                if outcome is not None:
                    return outcome
        return None

    def _supervise(self) -> AttemptOutcome:
        outcome = self._wait_for_fork_server()
        if outcome is not None:
            return outcome
        proc = self._start_child()
        interval = self.settings.lease_seconds / 3
        started = last_move = time.monotonic()
        last_renewal = self.holding.renewed_at  # the claim, or a renewal while the fork server loaded
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
                if (outcome := self.holding.doubted()) is not None:
                    return outcome
                if now >= next_live:  # on a steady beat (not drifting by a tick each time), unless far behind
                    next_live += live.LIVE_SECONDS
                    next_live = next_live if next_live > now else now + live.LIVE_SECONDS
                    outcome = self.holding.save_live(self.progress)
                    if outcome is not None:
                        return outcome
                if now >= next_beat:
                    next_beat = now + interval
                    outcome, last_renewal = self.holding.renew(now, last_renewal, self.progress)
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
            steps_etag=self.record.steps_etag,
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

    def _finish(self, result: Done | Failed) -> AttemptOutcome:
        if isinstance(result, Failed):
            return self._fail(result.message, result.permanent)
        output_key = self.layout.output_key(self.task_id, self.lease.attempt_id)
        done = self.progress
        ended = self.holding.end(
            "complete",
            lambda r, t: lifecycle.complete(
                r, t, lease=self.lease, output_path=output_key, progress=done, row_count=done.row_count
            ),
        )
        if isinstance(ended, AttemptOutcome):
            return ended
        self._drop_marker()
        log.info(
            "completed %s: %d rows in, %d out, %d errors", self.task_id, done.processed_count, done.row_count,
            done.error_count, extra=self.holding.extra("completed"),
        )  # fmt: skip
        return AttemptOutcome("completed")

    def _fail(self, error: str, permanent: bool) -> AttemptOutcome:
        self._kill_child()
        backoff = self.settings.retry_backoff_seconds
        record = self.holding.end(
            "fail",
            lambda r, t: lifecycle.fail(
                r, t, lease=self.lease, error=error, permanent=permanent, progress=self.progress, backoff_base=backoff
            ),
        )
        if isinstance(record, AttemptOutcome):
            return record
        if record.final:
            self._drop_marker()
        log.warning(
            "failed %s (attempt %d%s): %s",
            self.task_id,
            self.lease.attempt_id,
            ", final" if record.final else f", retry at {record.retry_at}",
            error,
            extra=self.holding.extra("failed"),
        )
        return AttemptOutcome("failed", error, final=record.final)

    def _release(self) -> AttemptOutcome:
        self._kill_child()
        record = self.holding.end("release", lambda r, t: lifecycle.release(r, t, lease=self.lease))
        if isinstance(record, AttemptOutcome):
            return record
        log.info("released %s back to the queue", self.task_id, extra=self.holding.extra("released"))
        if record.is_terminal:
            self._drop_marker()
        return AttemptOutcome("released")

    def _drop_marker(self) -> None:
        try:
            markers.drop(self.store, self.layout, self.task_id)
        except MarkerLost:  # the task came back to life and its marker could not be put back
            self._on_marker_lost(self.task_id)
        except S3TaskError as e:  # harmless: the next poll removes a stale marker
            log.warning("could not remove marker of %s: %s", self.task_id, e)
