"""A task's way through its states, as its users drive it: create, submit, cancel, retry. How they look
at it (get, list) is :mod:`s3task.tasks.looking`'s.

Each change re-reads the record (or starts from the one this service just wrote), checks who is
asking, and writes through :mod:`s3task.lifecycle` with a compare-and-set. Clients never decide a
transition from their own copy or clock.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from .. import csvio, handlers, lifecycle, live, markers, metrics, safetext, task_steps
from ..errors import InvalidInput, InvalidTransition, S3TaskError
from ..ids import new_task_id, validate_task_id
from ..progress import counts_from
from ..record import SCHEMA_VERSION, RecipeRef, TaskRecord, new_write_id, to_iso
from ..records import CAS_TRIES, Records
from ..states import Status
from ..store.base import ObjectMeta, PutMode
from . import access
from .access import Actor
from .input_check import Judged, check_input
from .limits import CreateLimits, CreateRate, SizedCache, record_bytes
from .looking import Looking, Page
from .references import check_references
from .unsent import drop_unsent

log = logging.getLogger("s3task.tasks")

MAX_NAME = 200
MAX_PAYLOAD_BYTES = 64 * 1024
#: Created records a service keeps for their submit (older ones are read again when submitted), at most
#: this many and this many bytes of them (parameters can make one 64 KiB).
#: A cancel is what a person waits for, against the one writer that keeps writing a running task's
#: record (its worker, a heartbeat at a time): it tries longer than other writes before it gives up
#: (TooManyConflicts). On a store that queues contending writes (SeaweedFS, Azurite) a cancel lost
#: ten races in a row to back-to-back heartbeats (tests/contract/test_tasks.py).
CANCEL_TRIES = 4 * CAS_TRIES
REMEMBERED_CREATES = 500
REMEMBERED_CREATES_BYTES = 4 * 1024 * 1024


def fit_name(name: str) -> str:
    """``name`` cut to a task name's length (:data:`MAX_NAME`), ending "…" where it was cut: for a name the app
    makes from others (a comparison's, a reference file's), which the person did not choose."""
    return name if len(name) <= MAX_NAME else name[: MAX_NAME - 1] + "…"


class Transitions:
    def __init__(self, records: Records, *, max_attempts: int = 3, limits: CreateLimits | None = None) -> None:
        self.records = records
        self.store, self.layout = records.store, records.layout
        self.max_attempts = max_attempts
        # None (a service built in code, not from Settings): no per-user limits beyond the record's own.
        self.limits = limits or CreateLimits(per_minute=0, params_bytes=MAX_PAYLOAD_BYTES, open_uploads=0)
        self._rate = CreateRate(self.limits.per_minute)
        #: Called with the task id after a submit or retry has queued it (the app wakes its embedded worker).
        self.on_queued: Callable[[str], None] | None = None
        #: Looking at tasks: one (kept once finished), or a page of them.
        self.looking = Looking(records)
        #: Records this service created and has not submitted yet, with their ETags (see submit).
        self._created: SizedCache[tuple[TaskRecord, str]] = SizedCache(REMEMBERED_CREATES, REMEMBERED_CREATES_BYTES)

    # --- create and submit -----------------------------------------------------------------------

    def create(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None = None,
        input_format: csvio.AskedFormat | None = None,
        fingerprint: Mapping[str, Any] | None = None,
        *,
        corrects: str | None = None,
        task_id: str | None = None,
        recipe: RecipeRef | None = None,
    ) -> TaskRecord:
        """A new task waiting for its input. ``input_format``: the input's ``delimiter`` and ``encoding``
        (:class:`s3task.csvio.InputFormat`; left out: comma, UTF-8), either of them ``detect`` to take
        what the file's first bytes show when it is submitted; for a workbook (told from its first bytes
        when it is submitted) its ``sheet`` and ``header_row`` (left out: the sheet it opens on, the
        header found). ``fingerprint``: the file the task is made for (s3task.fingerprint), if known.
        ``corrects``, ``task_id``: a task of corrected rows, made with the id its original lists already
        (s3task.tasks.corrections); the create is create-only, so an id taken is refused. ``recipe``: the
        recipe the settings came from (what was given on top included), kept on the record."""
        record = self.prepare(
            actor, name, task_type, payload, input_format, fingerprint, corrects=corrects, task_id=task_id,
            recipe=recipe,
        )  # fmt: skip
        return self.store_new(actor, record)

    def prepare(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None = None,
        input_format: csvio.AskedFormat | None = None,
        fingerprint: Mapping[str, Any] | None = None,
        *,
        corrects: str | None = None,
        task_id: str | None = None,
        recipe: RecipeRef | None = None,
    ) -> TaskRecord:
        """Every check :meth:`create` makes (the rate limit's count taken last), and the record it would
        write, written by nothing yet: a correction lists its id on the original between the two."""
        # Names reach operators' terminals (``s3task list``) and logs: no control or invisible characters.
        name = safetext.check_name(name, "task", MAX_NAME)
        params = handlers.get(task_type).validate(payload)
        check_references(actor, task_type, params, lambda task_id: self.get(actor, task_id))
        read_as = csvio.FormatRequest.parse(input_format)
        # The parameters live in status.json, which is refused on read past MAX_RECORD_BYTES:
        # a record written bigger could never be read (or listed, or cancelled) again. A step list is kept
        # beside it (task_steps), within its own cap (s3task.steps.spec.MAX_LIST_BYTES), checked as it was read.
        size = len(json.dumps(task_steps.split(params)[0], ensure_ascii=False).encode())
        allowed = min(MAX_PAYLOAD_BYTES, self.limits.params_bytes)
        if size > allowed:
            raise InvalidInput(
                f"the task's parameters take {size:,} bytes; at most {allowed // 1024} KiB are allowed"
                + (" (S3TASK_MAX_PARAMETERS_KB)" if allowed < MAX_PAYLOAD_BYTES else "")
            )
        self._rate.take(actor.name)  # last: a create refused for its input does not count
        record = self._new_record(actor, name, task_type, params, read_as, task_id)
        record.input_fingerprint = dict(fingerprint or {})  # in the create itself: no write more
        record.corrects = corrects
        if recipe is not None:
            record.recipe_id, record.recipe_version = recipe.id, recipe.version
        return record

    def store_new(self, actor: Actor, record: TaskRecord) -> TaskRecord:
        """Write a record :meth:`prepare` made: its step list beside it (if it has one), its "my tasks"
        marker, then the record (create-only)."""
        kept, steps = task_steps.split(record.payload)
        if steps is not None:  # first: a record names only a list that is there
            pinned = task_steps.keep(self.store, self.layout, record.task_id, steps)
            record = record.replace(payload=kept, steps_etag=pinned)
        # The "my tasks" marker goes first: a marker without a record is skipped
        # by listings, a record without its marker would be missing from them.
        self.store.put(self.layout.user_key(actor.name, record.task_id), b"", PutMode.OVERWRITE)
        record, etag = self.records.create(record)
        if etag is not None:
            self._remember(record, etag)
        return record

    def _new_record(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        params: dict[str, Any],
        read_as: csvio.FormatRequest,
        task_id: str | None = None,
    ) -> TaskRecord:
        task_id = validate_task_id(task_id) if task_id else new_task_id()
        now = to_iso(self.store.now())
        return TaskRecord(
            task_id=task_id,
            task_name=name,
            created_by=actor.name,
            task_type=task_type,
            payload=params,
            input_format=read_as,
            schema_version=SCHEMA_VERSION,
            max_attempts=self.max_attempts,
            revision=1,
            write_id=new_write_id(),
            input_object_path=self.layout.input_key(task_id),
            created_at=now,
            updated_at=now,
            history=[{"at": now, "event": "create", "attempt": 0}],
        )

    def submit(self, actor: Actor, task_id: str, *, size: int | None = None) -> TaskRecord:
        """Check the input, pin its ETag, add the active marker, then queue the task.

        ``size``: the input's size as the uploader knows it; a stored file of another size is refused.
        A task this service created (the New task page's, whose browser upload comes back to the
        same service) is not read again: its record as created, and the write that queues it is
        conditional on the record being unchanged since.
        """
        validate_task_id(task_id)
        known = self.recall(task_id)
        record, etag = known if known is not None else self.records.read(task_id)
        access.require(actor, record, "submit")
        if record.status != Status.CREATED:
            raise InvalidTransition(f"cannot submit {lifecycle.describe(record)}")
        try:
            meta, judged = check_input(self.store, record, self.params_of(record), size)
        except S3TaskError:
            # A record remembered here may be stale: cancelled meanwhile, its input went with it. Say so.
            fresh = self.records.read(task_id)[0] if known is not None else record
            if fresh.status != Status.CREATED:
                raise InvalidTransition(f"cannot submit {lifecycle.describe(fresh)}") from None
            raise
        return self.queue(record, etag, meta, judged)

    def params_of(self, record: TaskRecord) -> dict[str, Any]:
        """Every parameter of ``record``'s task, its step list read from beside the record (task_steps)."""
        return task_steps.params_of(self.store, self.layout, record)

    def _remember(self, record: TaskRecord, etag: str) -> None:
        """Keep a record this service created, and its ETag, for the submit (the newest 500, 4 MB at most)."""
        self._created.put(record.task_id, (record, etag), record_bytes(record))

    def recall(self, task_id: str) -> tuple[TaskRecord, str] | None:
        """The record this service created under ``task_id`` and its ETag, once (None: not known here)."""
        return self._created.pop(task_id)

    def discard(self, record: TaskRecord) -> bool:
        """Remove a task this service created and has not queued (its file was refused on the way in):
        its record (on the create's ETag: a record anyone changed since stays), then its input and its
        "my tasks" marker. False, with nothing removed, when the record cannot be removed.

        The record goes first: a process that dies after it leaves only objects no listing shows (an
        input without a record, a marker that listings skip), never a task waiting for a file."""
        known = self.recall(record.task_id)
        if known is None:
            return False
        try:
            self.store.delete(self.layout.status_key(record.task_id), if_match=known[1])
        except S3TaskError:
            return False
        for key in (record.input_object_path, self.layout.user_key(record.created_by, record.task_id)):
            with contextlib.suppress(S3TaskError):
                self.store.delete(key)
        return True

    def queue(self, record: TaskRecord, etag: str | None, meta: ObjectMeta, judged: Judged) -> TaskRecord:
        """Queue a created task whose input passed the check: ``etag`` is the record's as last seen."""
        task_id = record.task_id
        # Marker before record: a queued task without a marker would never be
        # polled; a marker on a still-created task is harmless (workers leave
        # created tasks alone) and the next submit reuses it.
        markers.add(self.store, self.layout, task_id)

        def change(current: TaskRecord, now: Any) -> TaskRecord:
            submitted = lifecycle.submit(current, now, input_etag=meta.etag, input_size=meta.size)
            # Detection settled: the worker reads the file so, and finds the needed columns where the check did.
            payload = {**current.payload, **judged.columns}
            return submitted.replace(input_format=judged.input_format, payload=payload)

        # Conditional on the record as read (or as created): one read less, and a record changed
        # in between (a cancel) fails the condition and is decided on again as it is now.
        first = None if etag is None else (record, etag)
        record = self.records.update(task_id, change, first=first)
        self._queued(task_id, "submit")
        return record

    def _queued(self, task_id: str, why: str) -> None:
        """After the marker and record writes: ring the bell for idle workers, wake an in-process one.

        Neither may fail the submit or retry, which has happened: the bell logs its own failure
        (workers' safety-net listing covers it), and a wake hook's trouble is only logged.
        """
        markers.ring(self.store, self.layout, why)
        if self.on_queued is not None:
            try:
                self.on_queued(task_id)
            except Exception:
                log.exception("the on_queued hook failed for %s", task_id)

    # --- looking (s3task.tasks.looking) ---------------------------------------------------------------

    def get(self, actor: Actor, task_id: str, *, fresh: bool = False) -> TaskRecord:
        return self.looking.get(actor, task_id, fresh=fresh)

    def list(self, actor: Actor, *, limit: int = 50, cursor: str | None = None, mine: bool = False) -> Page:
        return self.looking.list(actor, limit=limit, cursor=cursor, mine=mine)

    # --- cancel and retry ------------------------------------------------------------------------

    def cancel(self, actor: Actor, task_id: str, *, waiting_only: bool = False) -> TaskRecord:
        """``waiting_only``: only a task still waiting for its file (a refused upload's: one queued meanwhile,
        by another window with its own file, stays queued; InvalidTransition)."""
        looked = self.get(actor, task_id)  # with a running attempt's live counts (s3task.live)
        access.require(actor, looked, "cancel")
        seen = counts_from(looked)

        def change(r: TaskRecord, now: Any) -> TaskRecord:
            if waiting_only and r.status != Status.CREATED:
                raise InvalidTransition(f"not cancelled: {lifecycle.describe(r)}")
            return lifecycle.cancel(r, now, by=actor.name, seen=seen, attempt=looked.attempt_id)

        # The counts the worker saved live, which the signal below overwrites, are kept in the record.
        written = self.records.write(task_id, change, tries=CANCEL_TRIES)
        metrics.cancelled(written.record.task_type)
        # The worker of a task that was running (as the cancel found it) notices within seconds
        # (s3task.live); if we die before this, its next heartbeat does.
        live.signal_cancel(self.store, self.layout, written.before, actor.name)
        # Record first, then the marker: a crash in between leaves a stale
        # marker, which the next poll removes.
        self.store.delete(self.layout.active_key(task_id))
        drop_unsent(self.store, written.before)  # a task waiting for its file: what was sent of it goes
        return written.record

    def retry(self, actor: Actor, task_id: str) -> TaskRecord:
        record = self.get(actor, task_id)
        access.require(actor, record, "retry")
        if record.status != Status.FAILED:
            raise InvalidTransition(f"cannot retry {lifecycle.describe(record)}; only failed tasks can be retried")
        # A final failure had its marker removed: put it back before queueing.
        markers.add(self.store, self.layout, task_id)
        record = self.records.update(task_id, lambda r, now: lifecycle.retry(r, now, automatic=False))
        # And again after: a poller that saw the task failed for good may have dropped the marker
        # between our add and our write (its re-read still said "failed"). Retry is the one way a
        # finished task comes back, so it is the one place that must re-add last.
        markers.add_again(self.store, self.layout, task_id)
        self._queued(task_id, "retry")
        return record
