"""Reading and writing task records (``status.json``) with compare-and-set.

Every write of a record goes through :class:`Records` (``update``/``write``, or ``create`` for
the first one) with a change function from :mod:`s3task.lifecycle`; nothing else writes
``status.json``. A :class:`Records` is told by whoever builds it which :class:`StateHook`
(if any) hears of the state changes it writes; this module imports nothing above it.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from .errors import AlreadyExists, NotFound, PreconditionFailed, StoreUnavailable, TaskNotFound, TooManyConflicts
from .layout import Layout
from .record import TaskRecord, record_from_json
from .store.base import ObjectStore, PutMode

log = logging.getLogger(__name__)

CAS_TRIES = 10
#: Reads to tell whether a write whose answer was lost landed, before giving up.
LANDED_READS = 4


Change = Callable[[TaskRecord, datetime], "TaskRecord | None"]


class Pending(Protocol):
    """A state change announced before its write: told afterwards whether the write landed."""

    def done(self, won: bool) -> None: ...


class StateHook(Protocol):
    """Told of each state change a :class:`Records` is about to write (s3task.notify's notifier is one):
    ``before`` runs before the conditional write and returns what to tell after it, or None. Never for a
    heartbeat or a progress save (same state); what it raises is logged and never fails the write."""

    def before(self, store: ObjectStore, layout: Layout, old: TaskRecord, new: TaskRecord) -> Pending | None: ...


@dataclass(frozen=True)
class Written:
    """What a compare-and-set write left: the record now stored, its ETag (None: not known, a write whose
    answer was lost, found landed by a read), and the record the change was decided on (``record``
    itself when there was nothing to do). ``(record, etag)`` is a ``first`` for the next write."""

    record: TaskRecord
    etag: str | None
    before: TaskRecord

    @property
    def changed(self) -> bool:
        return self.record is not self.before


class Records:
    """The task records of one store: read, create, and change them with compare-and-set. ``hook``: who is
    told of the state changes written here (None: nobody), from whoever built this; none is looked for."""

    def __init__(self, store: ObjectStore, layout: Layout, hook: StateHook | None = None) -> None:
        self.store, self.layout, self.hook = store, layout, hook

    def read(self, task_id: str) -> tuple[TaskRecord, str]:
        """The record and the ETag it was read with."""
        key = self.layout.status_key(task_id)
        try:
            got = self.store.get(key)
        except NotFound as e:
            raise TaskNotFound(f"task {task_id} does not exist") from e
        if not got.body:  # a delete half done on a store without conditional deletes (store.s3_writer)
            raise TaskNotFound(f"task {task_id} does not exist")
        return record_from_json(got.body, key), got.etag

    def create(self, record: TaskRecord) -> tuple[TaskRecord, str | None]:
        """Write the first version of a record; fails if the id is already taken.

        Returns the record and the ETag it was stored with (None when a lost answer left it unknown).
        Lost-response safety, as in :meth:`update`: an SDK retry of a create that landed sees its own
        object and reports ``AlreadyExists``; a timeout says nothing either way. The record's
        ``write_id`` tells whether the object there is ours.
        """
        key = self.layout.status_key(record.task_id)
        try:
            etag = self.store.put(key, record.to_json(), PutMode.CREATE, content_type="application/json")
        except (AlreadyExists, StoreUnavailable):
            with contextlib.suppress(TaskNotFound):  # nothing there at all: not ours, the error stands
                if record.write_id and self._landed(record):
                    return record, None
            raise
        return record, etag

    def update(
        self, task_id: str, change: Change, *, tries: int = CAS_TRIES, first: tuple[TaskRecord, str] | None = None
    ) -> TaskRecord:
        """Read, apply ``change``, write back only if nobody wrote in between.

        ``change(record, now)`` is a pure function (from :mod:`s3task.lifecycle`) returning the next
        record, or ``None`` for "nothing to do". It may raise to refuse. On a lost race we re-read and
        call it again on the fresh record — the decision is always made against what is really stored.

        ``first``: a record and the ETag it was read or written with, to start from instead of reading
        (one GET less). The write is conditional on that ETag, so it lands only if the record is still
        exactly that; if ``change`` refuses a ``first`` record, the refusal is checked again on a fresh
        read. "Nothing to do" on ``first`` is taken as it is (a poll's expiry check on the record it
        just read must not cost a second read).

        Lost-response safety: the new record carries a fresh ``write_id``. If the put reports a failed
        precondition or times out, the write may still have landed (an SDK retry after a lost response
        sees its own write as a change). We re-read: if the stored ``write_id`` is ours, we won.
        """
        return self.write(task_id, change, tries=tries, first=first).record

    def write(
        self, task_id: str, change: Change, *, tries: int = CAS_TRIES, first: tuple[TaskRecord, str] | None = None
    ) -> Written:
        """:meth:`update`, returning also the record's new ETag and the record the change was decided on."""
        known = first
        for attempt in range(tries):
            record, etag, new = self._decide(task_id, change, known, decide_again=known is first)
            known = None
            if new is None:
                return Written(record, etag, record)
            won, new_etag = self._put(record, new, etag, attempt)
            if won:
                return Written(new, new_etag, record)
            time.sleep(random.uniform(0, 0.02 * (attempt + 1)))
        raise TooManyConflicts(f"task {task_id} kept changing under us; try again in a moment")

    def _decide(
        self, task_id: str, change: Change, known: tuple[TaskRecord, str] | None, *, decide_again: bool
    ) -> tuple[TaskRecord, str, TaskRecord | None]:
        """The record to write over, its ETag, and ``change``'s verdict on it."""
        if known is None:
            record, etag = self.read(task_id)
            return record, etag, change(record, self.store.now())
        record, etag = known
        try:
            return record, etag, change(record, self.store.now())
        except Exception:
            if not decide_again:
                raise
            # Refused on what the caller remembered: decide again on what is stored.
            record, etag = self.read(task_id)
            return record, etag, change(record, self.store.now())

    def _put(self, record: TaskRecord, new: TaskRecord, etag: str, attempt: int) -> tuple[bool, str | None]:
        """Write ``new`` over ``record`` if the ETag still matches: whether it landed, and its new ETag."""
        key = self.layout.status_key(new.task_id)
        # A state change is announced by its writer, to the hook it was given (None: nobody is told).
        note = self._announce(record, new)
        new_etag: str | None = None
        try:
            new_etag = self.store.put(key, new.to_json(), PutMode.update(etag), content_type="application/json")
            won = True
        except PreconditionFailed:
            won = self._landed(new)  # if this raises, the outbox entry is settled by a sweep
            if not won:
                log.debug("lost compare-and-set on %s (try %d); re-reading", key, attempt + 1)
        except StoreUnavailable:
            won = self._landed(new)
            if not won:
                _tell(note, False)
                raise
        _tell(note, won)
        return won, new_etag

    def _announce(self, old: TaskRecord, new: TaskRecord) -> Pending | None:
        """What the hook wants told of a state change about to be written, or None. Never raises: no state
        change fails because of a notification (the log line names the exception's type only, since
        its text could quote a URL or a password from the settings)."""
        if self.hook is None or old.state is new.state:
            return None  # heartbeats and progress: never a notification, never a request
        try:
            return self.hook.before(self.store, self.layout, old, new)
        except Exception as e:
            log.error("no notification for task %s: preparing it failed (%s)", new.task_id, type(e).__name__)
            return None

    def _landed(self, new: TaskRecord) -> bool:
        """Is the stored record the one we wrote? Asked when the store just failed us, so a read that
        fails too is tried again a few times: giving up leaves the outcome unknown, and a claim that
        landed but was given up by its worker expires and costs the task a failed attempt.

        (A lost race re-reads after its pause rather than reuse this read: a record written often,
        a heartbeat at a time, would change again during the pause.)"""
        for attempt in range(1, LANDED_READS + 1):
            try:
                current, _ = self.read(new.task_id)
            except StoreUnavailable:
                if attempt == LANDED_READS:
                    raise
                time.sleep(0.05 * 2**attempt)
                continue
            return current.write_id == new.write_id
        return False  # not reached: the last failed read raises


def _tell(note: Pending | None, won: bool) -> None:
    """``note.done(won)``, never raising into the write."""
    if note is None:
        return
    try:
        note.done(won)
    except Exception as e:
        log.error("a notification could not be queued (%s)", type(e).__name__)


# --- the same, as functions, for a caller with no hook (scripts, tests, readers) ------------------


def read_record(store: ObjectStore, layout: Layout, task_id: str) -> tuple[TaskRecord, str]:
    """:meth:`Records.read`."""
    return Records(store, layout).read(task_id)


def create_record(store: ObjectStore, layout: Layout, record: TaskRecord) -> tuple[TaskRecord, str | None]:
    """:meth:`Records.create`, telling no hook."""
    return Records(store, layout).create(record)


def update_record(store: ObjectStore, layout: Layout, task_id: str, change: Change, **options: Any) -> TaskRecord:
    """:meth:`Records.update` (``tries``, ``first``; ``hook`` to tell one of a state change)."""
    hook: StateHook | None = options.pop("hook", None)
    return Records(store, layout, hook).update(task_id, change, **options)
