"""The worker loop: poll the ``active/`` index, tidy what needs it, claim, run attempts.

Poll = list ``active/`` + read those records in parallel. A long-running worker
(:meth:`Worker.run_forever`) first HEADs the active-bell (s3task.markers.ring) and
lists only when the bell rang since its last listing, that listing found work in
progress (queued, running, failed and waiting for a retry: time alone may change
those), it was woken (:meth:`Worker.wake`), or ``idle_list_seconds`` passed. Everything
that makes a task claimable writes its marker and record first and rings after, and
the bell's ETag is taken before the listing, so no listing misses a task without the
next poll listing again. For each record:
queued → a claim candidate; failed, not final, ``retry_at`` passed → back to
the queue; running with its lease (plus a grace) expired by the *store's*
clock → a failed attempt; terminal → drop the stale marker; created → leave
alone (its submit may be under way). Unreadable records are logged and
skipped, never rewritten. Claiming the candidates and running their attempts is
:mod:`s3task.worker.claim`'s; the attempt itself, :mod:`s3task.worker.attempt`'s.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .. import lifecycle, markers, metrics, notify
from ..config import Settings
from ..errors import InvalidTransition, MarkerLost, NotFound, RecordError, S3TaskError, TaskNotFound
from ..layout import Layout
from ..lifecycle import Status
from ..record import TaskRecord
from ..records import Records
from ..store import open_store
from ..store.base import ObjectStore
from ..store.probe import cas_probe
from .attempt import Attempt
from .claim import Claims
from .forkserver import fork_server_ready, start_fork_server, wait_for_fork_server
from .inbox import InboxWatch
from .leftovers import Sweeper
from .presence import Presence

log = logging.getLogger("s3task.worker")

_READERS = 16
#: What a worker remembers of the bell before its first look (or after a look or a listing failed).
_UNKNOWN = "?"


class Worker:
    def __init__(
        self,
        settings: Settings,
        store: ObjectStore | None = None,
        layout: Layout | None = None,
        *,
        notifier: notify.Notifier | None = None,
    ) -> None:
        """``notifier``: who sends the email and webhooks of the state changes this worker writes (and
        sweeps the outbox); left out, one is made from ``settings`` (none when they name no channel).
        A channel setting that does not fit stops the worker here (:class:`SettingsError`)."""
        self.settings = settings
        # The channels first: a setting that does not fit stops the worker before any store call.
        self.notifier = notifier if notifier is not None else notify.from_settings(settings)
        if store is None or layout is None:
            store, layout = open_store(settings.store, clock=settings.clock)
        self.store, self.layout = store, layout
        self.records = Records(store, layout, self.notifier)
        self.stop_event = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self.presence = Presence(store, layout, settings.worker_id)
        #: Removes the staged files of writers that were killed (the local store; s3task.worker.leftovers).
        self.sweeper = Sweeper(store, settings)
        #: Sweeps the recipes' inboxes every inbox_interval, holding the sweep's lease (s3task.worker.inbox).
        self.inbox = InboxWatch(store, layout, settings, self.notifier)
        #: The attempts in hand: claimed into free slots, each on its own thread.
        self.claims = Claims(
            self.records,
            settings,
            self.presence,
            stop=self.stop_event,
            wake=self._wake,
            prove=self.prove_store,
            on_marker_lost=self.marker_lost,
        )
        self._store_proven = False
        #: Tasks that may be pending but whose marker could not be put back: tried again every poll.
        self._unmarked: set[str] = set()
        # The idle check (see the module docstring): the bell's ETag as of the last listing (None:
        # no bell yet), whether that listing found work in progress, when it was, a wake not yet served.
        self._bell: str | None = _UNKNOWN
        self._busy = True
        self._listed_at = -float("inf")
        self._woken = False
        #: Listings this worker made and polls it skipped because nothing changed (tests, the benchmark).
        self.listings = 0
        self.quiet_polls = 0

    # --- lifecycle of the worker itself -------------------------------------------

    def prove_store(self) -> None:
        """Refuse a store that ignores conditional writes (:class:`UnsafeStore`), once per worker.

        Every way of running a worker — ``worker.py``, the app's embedded one — goes
        through here before its first claim: on such a store two workers could both
        "win" a claim and process one task twice.
        """
        if not self._store_proven:
            cas_probe(self.store, self.layout.prefix)
            self._store_proven = True

    def run_forever(self) -> None:
        start_fork_server()  # loads in the background while the worker polls (and claims)
        self.prove_store()
        log.info(
            "worker %s polling %s every %.1fs",
            self.settings.worker_id,
            self.store.description,
            self.settings.poll_interval,
            extra={"event": "started"},
        )
        metrics.worker_started()
        try:
            while not self.stop_event.is_set():
                try:
                    self.poll_once(idle_check=True)
                except S3TaskError as e:
                    log.warning("poll failed: %s", e)
                except Exception:  # a bug must not stop the loop: tasks in hand still need their heartbeats
                    log.exception("poll failed unexpectedly")
                self.presence.beat(self.task_ids())  # never raises
                notify.sweep(self.notifier, self.store, self.layout)  # notifications dead senders left; never raises
                self.sweeper.maybe()  # staged files killed writers left; no store request
                self.inbox.maybe()  # files dropped for recipes, every inbox_interval; never raises
                self._wake.wait(self.settings.poll_interval)
                self._wake.clear()
            self._drain()
            self.inbox.stop()
            wait_for_fork_server(120)  # stopped in its first second: let the server finish loading and go
        finally:
            metrics.worker_stopped()

    def run_once(self) -> None:
        """Sweep the inboxes once (S3TASK_INBOX_INTERVAL > 0, as the sweep's lease allows), then work until
        nothing is claimable right now, and return (cron, tests).

        A store with no active task is seen with one listing and the run ends there, without
        starting the fork server. Otherwise the server is started and loaded before the first
        claim, so a task's time from its claim to its end is its own.
        """
        self.prove_store()
        metrics.worker_started()
        try:
            self.inbox.maybe()  # files dropped for recipes become tasks first, and are run in this run
            self.inbox.stop()
            if not self.store.list_keys(self.layout.active_root, limit=1):
                self._restore_markers()
                self.presence.beat([], force=True)  # a cron worker is seen even when there is no work
                return
            if not fork_server_ready(self.settings.stall_timeout):  # starts it, and waits while it loads
                wait = self.settings.stall_timeout
                log.error("the worker's process for tasks was not ready after %.0f seconds; try again later", wait)
                return
            while not self.stop_event.is_set():
                started = self.poll_once()
                if not started and not self.task_ids():
                    break
                # Until an attempt ends (it wakes us) or a poll interval passes (a cancel is noticed by the
                # poll, as in run_forever): polling at once would only re-read the records we just claimed.
                self._wake.wait(self.settings.poll_interval)
                self._wake.clear()
            self._drain()
        finally:
            self.sweeper.maybe()
            metrics.worker_stopped()

    def wake(self) -> None:
        """Poll now, and list ``active/`` whatever the bell says (a submit or retry in this process)."""
        with self._lock:
            self._woken = True
        self._wake.set()

    def stop(self, timeout: float | None = 30) -> None:
        """Stop claiming; running attempts release their tasks back to the queue."""
        self.stop_event.set()
        self._wake.set()
        self._drain(timeout)

    def _drain(self, timeout: float | None = None) -> None:
        self.claims.join(None if timeout is None else time.monotonic() + timeout)
        self.presence.beat([], force=True, stopped=self.stop_event.is_set())

    def task_ids(self) -> list[str]:
        return self.claims.ids()

    # --- polling -----------------------------------------------------------------

    def poll_once(self, *, idle_check: bool = False) -> int:
        """One pass over ``active/``. Returns the number of attempts started.

        ``idle_check``: skip the listing when the bell says nothing changed (see the module docstring).
        """
        self._restore_markers()
        if idle_check and not self._should_list():
            self.quiet_polls += 1
            return 0
        try:
            keys = self.store.list_keys(self.layout.active_root)
        except BaseException:
            self._bell = _UNKNOWN  # a ring seen just before this failed listing must still lead to one
            raise
        self.listings += 1
        self._listed_at = time.monotonic()
        ids = [i for i in (self.layout.task_id_of(k) for k in keys) if i]
        found = self._read_all(ids)
        # Work in progress keeps us listing every poll; so does a marker whose record we could not read.
        self._busy = any(_in_progress(found[i][0]) if i in found else True for i in ids)
        self._doubt_mine(ids, found)
        candidates: list[tuple[TaskRecord, str]] = []
        for task_id in ids:  # newest first
            item = found.get(task_id)
            if item is None:
                continue
            record, etag = item
            if record.status == Status.QUEUED:
                candidates.append((record, etag))
            else:
                self._tidy(record, etag)
        candidates.reverse()  # oldest first
        metrics.polled(len(candidates))
        return self.claims.take(candidates)

    def _should_list(self) -> bool:
        """HEAD the bell, remembering its ETag *before* any listing; say whether this poll must list."""
        with self._lock:
            woken, self._woken = self._woken, False
        before = self._bell
        try:
            self._bell = self.store.head(self.layout.bell_key).etag
        except NotFound:
            self._bell = None  # never rung yet: the first ring changes it
        except Exception as e:  # cannot tell: list, and look again next poll
            log.debug("could not read the active-bell: %s", e)
            self._bell = _UNKNOWN
        return (
            woken
            or self._busy
            or self._bell == _UNKNOWN
            or self._bell != before
            or time.monotonic() - self._listed_at >= self.settings.idle_list_seconds
        )

    def _doubt_mine(self, ids: list[str], found: dict[str, tuple[TaskRecord, str]]) -> None:
        """Tell each attempt of ours whose task this poll saw cancelled (or unmarked) to re-read its record.

        The poll reads every active record anyway, so a cancel is noticed within a poll interval at no
        cost of its own, even while an attempt's counts stand still and no progress save could fail.
        """
        listed = set(ids)
        mine: dict[str, Attempt] = self.claims.attempts()
        for task_id, attempt in mine.items():
            item = found.get(task_id)
            if task_id not in listed:
                attempt.doubt()  # cancel deletes the marker; so does a finished attempt (then it is over anyway)
            elif item is not None and (
                item[0].status != Status.RUNNING or item[0].lease_token != attempt.lease.lease_token
            ):
                attempt.doubt()

    def _read_all(self, ids: list[str]) -> dict[str, tuple[TaskRecord, str]]:
        def one(task_id: str) -> tuple[TaskRecord, str] | None:
            try:
                return self.records.read(task_id)
            except TaskNotFound:
                self._delete_marker(task_id)  # a marker with no task behind it
            except RecordError as e:
                log.error("skipping unreadable task %s: %s", task_id, e, extra={"task_id": task_id})
            except S3TaskError as e:
                log.warning("could not read %s: %s", task_id, e, extra={"task_id": task_id})
            return None

        if not ids:
            return {}
        with ThreadPoolExecutor(max_workers=min(_READERS, len(ids))) as pool:
            return {i: r for i, r in zip(ids, pool.map(one, ids), strict=True) if r is not None}

    def _tidy(self, record: TaskRecord, etag: str) -> None:
        task_id = record.task_id
        try:
            if record.is_terminal:
                self._delete_marker(task_id)
            elif lifecycle.retry_due(record, self.store.now()):
                self.records.update(task_id, lambda r, t: lifecycle.retry(r, t, automatic=True), first=(record, etag))
                log.info(
                    "retrying %s (attempt %d failed)",
                    task_id,
                    record.attempt_id,
                    extra={"task_id": task_id, "event": "retried"},
                )
                self._wake.set()
            elif record.status == Status.RUNNING and not self.claims.holds(task_id):
                grace = self.settings.lease_grace_seconds
                backoff = self.settings.retry_backoff_seconds
                written = self.records.write(
                    task_id,
                    lambda r, t: lifecycle.expire(r, t, grace_seconds=grace, backoff_base=backoff),
                    first=(record, etag),
                )
                new = written.record
                if written.changed:  # this poll's write expired the lease (None from expire: still live)
                    metrics.lease_expired(new.task_type)
                if new.status == Status.FAILED:
                    log.warning("%s", new.last_error, extra={"task_id": task_id, "event": "failed"})
                    if new.final:
                        self._delete_marker(task_id)
        except InvalidTransition as e:
            log.debug("%s changed while tidying: %s", task_id, e)
        except S3TaskError as e:
            log.warning("could not tidy %s: %s", task_id, e, extra={"task_id": task_id})
        except Exception:  # e.g. an OSError from a local disk: one task's trouble must not stop the poll
            log.exception("could not tidy %s", task_id, extra={"task_id": task_id})

    def _delete_marker(self, task_id: str) -> None:
        try:
            markers.drop(self.store, self.layout, task_id)
        except MarkerLost:
            self.marker_lost(task_id)
        except S3TaskError as e:
            log.debug("could not remove marker of %s: %s", task_id, e)

    def marker_lost(self, task_id: str) -> None:
        with self._lock:
            self._unmarked.add(task_id)

    def _restore_markers(self) -> None:
        with self._lock:
            pending = list(self._unmarked)
        for task_id in pending:
            try:
                markers.restore(self.store, self.layout, task_id)
            except Exception:  # logged by restore (or below); the next poll tries again
                log.debug("marker of %s not restored yet", task_id, exc_info=True)
                continue
            with self._lock:
                self._unmarked.discard(task_id)


def _in_progress(record: TaskRecord) -> bool:
    """Whether a marked task keeps the worker listing every poll: time alone (a retry coming due, a lease
    running out) or a claim may change it. A created task waits for its submit, which rings when done."""
    return record.status in (Status.QUEUED, Status.RUNNING) or (record.status == Status.FAILED and not record.final)
