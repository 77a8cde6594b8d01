"""The control API: everything a user (through the app, the CLI or HTTP) can do to tasks.

The API owns state transitions: each call re-reads the record, checks who is
asking, and writes through :mod:`s3task.lifecycle` with a compare-and-set.
Clients never decide a transition from their own copy or clock.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from . import csvio, exports, handlers, lifecycle, live, markers, metrics
from .errors import (
    AccessDenied,
    InvalidInput,
    InvalidTaskId,
    InvalidTransition,
    NotFound,
    RecordError,
    S3TaskError,
    TaskNotFound,
)
from .ids import new_task_id, validate_task_id
from .layout import CSV_TYPE, Layout
from .progress import Progress
from .record import SCHEMA_VERSION, Records, StateHook, TaskRecord, new_write_id, parse_iso, to_iso
from .states import State
from .store.base import ObjectMeta, ObjectStore, PutMode
from .uploads import InputFiles

if TYPE_CHECKING:  # read_output's frame; pandas is imported when rows are read
    import pandas as pd

log = logging.getLogger("s3task.tasks")

MAX_LIST = 200
#: Seconds a pending task may sit untouched before a reader checks that workers can still find it.
MARKER_CHECK_AFTER = 60.0
MAX_NAME = 200
MAX_PAYLOAD_BYTES = 64 * 1024
#: Created records a service keeps for their submit (older ones are read again when submitted).
REMEMBERED_CREATES = 500
_READERS = 16


@dataclass(frozen=True)
class Actor:
    """Who is asking. Operators may act on every task; others on their own."""

    name: str
    operator: bool = False

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > 200 or any(ord(c) < 32 for c in self.name):
            raise AccessDenied("a user name is required (printable, at most 200 characters)")


@dataclass(frozen=True)
class Created:
    record: TaskRecord
    #: Where the browser may PUT the input directly, or None if the store has no presigned URLs.
    upload_url: str | None
    upload_content_type: str = CSV_TYPE


@dataclass
class Page:
    tasks: list[TaskRecord]
    next_cursor: str | None
    #: Tasks whose record could not be read, with the reason (skipped, never rewritten).
    problems: list[str] = field(default_factory=list)


class UrlSigner(Protocol):
    """Makes transfer URLs for a store that has no presigned URLs of its own (see s3task.transfer)."""

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str: ...

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str: ...


class TaskService(InputFiles):
    def __init__(
        self,
        store: ObjectStore,
        layout: Layout,
        *,
        max_attempts: int = 3,
        url_seconds: int = 900,
        url_signer: UrlSigner | None = None,
        on_queued: Callable[[str], None] | None = None,
        hook: StateHook | None = None,
    ) -> None:
        self.store = store
        self.layout = layout
        #: Reads and writes the records; ``hook`` hears of the state changes written (None: nobody does,
        #: whatever the environment says: the notifier comes from whoever builds the service).
        self.records = Records(store, layout, hook)
        #: Called with the task id after a submit or retry has queued it (the app wakes its embedded worker).
        self.on_queued = on_queued
        self.max_attempts = max_attempts
        self.url_seconds = url_seconds
        #: Used only when the store's own presign returns None (the local store).
        self.url_signer = url_signer
        # Completed and abandoned records never change again: cache them.
        self._finished: dict[str, TaskRecord] = {}
        #: Records this service created and has not submitted yet, with their ETags (see submit).
        self._created: collections.OrderedDict[str, tuple[TaskRecord, str]] = collections.OrderedDict()
        self._lock = threading.Lock()
        #: When each pending task's marker was last checked (monotonic seconds).
        self._marker_checked: dict[str, float] = {}
        #: The copies of outputs (Excel, exact CSV, errors only) this process makes (s3task.exports).
        self.exports = exports.Exports(store)

    # --- access ------------------------------------------------------------

    @staticmethod
    def may_act(actor: Actor, record: TaskRecord) -> bool:
        return actor.operator or record.created_by == actor.name

    def _require(self, actor: Actor, record: TaskRecord, action: str) -> None:
        if not self.may_act(actor, record):
            raise AccessDenied(
                f"task {record.task_id} belongs to {record.created_by}; only they or an operator can {action} it"
            )

    def can_cancel(self, actor: Actor, record: TaskRecord) -> bool:
        return self.may_act(actor, record) and lifecycle.allows(record, "cancel")

    def can_retry(self, actor: Actor, record: TaskRecord) -> bool:
        return self.may_act(actor, record) and lifecycle.allows(record, "retry")

    # --- create, upload, submit --------------------------------------------

    def create(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None = None,
        input_format: Mapping[str, Any] | None = None,
    ) -> Created:
        """A new task waiting for its input. ``input_format``: the input's ``delimiter`` and ``encoding``
        (:class:`s3task.csvio.InputFormat`; left out: comma, UTF-8), either of them ``detect`` to take
        what the file's first bytes show when it is submitted."""
        name = (name or "").strip()
        if not name:
            raise InvalidInput("give the task a name")
        if len(name) > MAX_NAME:
            raise InvalidInput(f"the task name is longer than {MAX_NAME} characters")
        params = handlers.get(task_type).validate(payload)
        read_as = csvio.parse_input_format(input_format, allow_detect=True)
        # The parameters live in status.json, which is refused on read past MAX_RECORD_BYTES:
        # a record written bigger could never be read (or listed, or cancelled) again.
        size = len(json.dumps(params, ensure_ascii=False).encode())
        if size > MAX_PAYLOAD_BYTES:
            raise InvalidInput(
                f"the task's parameters take {size:,} bytes; at most {MAX_PAYLOAD_BYTES // 1024} KiB are allowed"
            )
        task_id = new_task_id()
        now = to_iso(self.store.now())
        record = TaskRecord(
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
        # The "my tasks" marker goes first: a marker without a record is skipped
        # by listings, a record without its marker would be missing from them.
        self.store.put(self.layout.user_key(actor.name, task_id), b"", PutMode.OVERWRITE)
        record, etag = self.records.create(record)
        url = self.store.presign_put(record.input_object_path, expires=self.url_seconds, content_type=CSV_TYPE)
        if url is None and self.url_signer is not None:
            url = self.url_signer.presign_put(record.input_object_path, expires=self.url_seconds, content_type=CSV_TYPE)
        if etag is not None:
            self._remember(record, etag)
        return Created(record, url)

    def submit(self, actor: Actor, task_id: str, *, size: int | None = None) -> TaskRecord:
        """Check the input, pin its ETag, add the active marker, then queue the task.

        ``size``: the input's size as the uploader knows it; a stored file of another size is refused.
        A task this service created (the New task page's, whose browser upload comes back to the
        same service) is not read again: its record as created, and the write that queues it is
        conditional on the record being unchanged since.
        """
        validate_task_id(task_id)
        known = self._recall(task_id)
        record, etag = known if known is not None else self.records.read(task_id)
        self._require(actor, record, "submit")
        if record.status != lifecycle.Status.CREATED:
            raise InvalidTransition(f"cannot submit {lifecycle.describe(record)}")
        meta, read_as = self._check_input(record, size)
        return self._queue(record, etag, meta, read_as)

    def _remember(self, record: TaskRecord, etag: str) -> None:
        """Keep a record this service created, and its ETag, for the submit (the newest few hundred)."""
        with self._lock:
            self._created[record.task_id] = (record, etag)
            while len(self._created) > REMEMBERED_CREATES:
                self._created.popitem(last=False)

    def _recall(self, task_id: str) -> tuple[TaskRecord, str] | None:
        """The record this service created under ``task_id`` and its ETag, once (None: not known here)."""
        with self._lock:
            return self._created.pop(task_id, None)

    def _queue(self, record: TaskRecord, etag: str | None, meta: ObjectMeta, read_as: csvio.InputFormat) -> TaskRecord:
        """Queue a created task whose input passed the check: ``etag`` is the record's as last seen."""
        task_id = record.task_id
        # Marker before record: a queued task without a marker would never be
        # polled; a marker on a still-created task is harmless (workers leave
        # created tasks alone) and the next submit reuses it.
        markers.add(self.store, self.layout, task_id)

        def change(current: TaskRecord, now: Any) -> TaskRecord:
            submitted = lifecycle.submit(current, now, input_etag=meta.etag, input_size=meta.size)
            return submitted.replace(input_format=read_as.to_dict())  # detection settled: the worker reads so

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

    def get(self, actor: Actor, task_id: str) -> TaskRecord:
        """Anyone may look at a task; acting on it is checked per action."""
        validate_task_id(task_id)
        cached = self._finished.get(task_id)
        if cached is not None:
            return cached
        record, _ = self.records.read(task_id)
        if record.status in (lifecycle.Status.COMPLETED, lifecycle.Status.ABANDONED):
            with self._lock:
                self._finished[task_id] = record
        elif record.state in (State.QUEUED, State.FAILED):
            self._check_marker(record)
        elif record.status == lifecycle.Status.RUNNING:
            record = live.merged(self.store, self.layout, record)  # the counts of the last few seconds
        return record

    def _check_marker(self, record: TaskRecord) -> None:
        """A pending task nobody has touched for a while gets its ``active/`` marker back if it lost it.

        Markers are written before a task becomes pending, and put back when a
        worker's drop races a retry; only a worker that dies between its delete
        and that check leaves a pending task unmarked, invisible to every poll.
        Whoever looks at such a task (its page, ``show``, the API) heals it: one
        HEAD per task and minute, only for tasks that look stuck.
        """
        updated = parse_iso(record.updated_at)
        if updated is None or (self.store.now() - updated).total_seconds() < MARKER_CHECK_AFTER:
            return
        with self._lock:
            last = self._marker_checked.get(record.task_id, -MARKER_CHECK_AFTER)
            if time.monotonic() - last < MARKER_CHECK_AFTER:
                return
            self._marker_checked[record.task_id] = time.monotonic()
        key = self.layout.active_key(record.task_id)
        try:
            self.store.head(key)
        except NotFound:
            log.warning("task %s is %s but had no active/ marker; putting it back", record.task_id, record.status)
            with contextlib.suppress(S3TaskError):
                markers.add_again(self.store, self.layout, record.task_id)
                markers.ring(self.store, self.layout, "marker put back")
        except S3TaskError:
            pass  # a look at a task never fails for this; the next look tries again

    def list(self, actor: Actor, *, limit: int = 50, cursor: str | None = None, mine: bool = False) -> Page:
        """Newest first, ``limit`` at a time; pass ``next_cursor`` back for the next page."""
        if not 1 <= limit <= MAX_LIST:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIST}")
        if cursor is not None:
            try:
                validate_task_id(cursor)
            except InvalidTaskId as e:
                raise InvalidInput("that page cursor is not valid; start again from the first page") from e
        # One key more than a page: it says whether another page exists, so the last page never
        # hands out a cursor to an empty one. Task ids (first character 0-7) sort before every
        # other name under the prefix (active/, by-user/, workers/, _probe/), which are skipped.
        if mine:
            root = self.layout.user_root(actor.name)
            keys = self.store.list_keys(root, start_after=root + cursor if cursor else None, limit=limit + 1)
        else:
            start = self.layout.task_cursor(cursor) if cursor else None
            keys = self.store.list_prefixes(self.layout.root, start_after=start, limit=limit + 1)
        ids = [i for i in (self.layout.task_id_of(k) for k in keys) if i]
        page_ids = ids[:limit]
        records, problems = self._read_many(actor, page_ids)
        next_cursor = page_ids[-1] if len(ids) > limit else None
        return Page(records, next_cursor, problems)

    def _read_many(self, actor: Actor, ids: builtins.list[str]) -> tuple[builtins.list[TaskRecord], builtins.list[str]]:
        def one(task_id: str) -> TaskRecord | str | None:
            try:
                return self.get(actor, task_id)
            except TaskNotFound:
                return None  # a marker whose create never finished
            except RecordError as e:
                return f"{task_id}: {e}"

        with ThreadPoolExecutor(max_workers=min(_READERS, max(1, len(ids)))) as pool:
            results = list(pool.map(one, ids))
        records = [r for r in results if isinstance(r, TaskRecord)]
        problems = [r for r in results if isinstance(r, str)]
        return records, problems

    # --- acting ------------------------------------------------------------

    def cancel(self, actor: Actor, task_id: str) -> TaskRecord:
        looked = self.get(actor, task_id)  # with a running attempt's live counts (s3task.live)
        self._require(actor, looked, "cancel")
        seen = Progress(**{name: getattr(looked, name) or 0 for name in Progress.__dataclass_fields__})
        before: builtins.list[TaskRecord] = []

        def change(current: TaskRecord, now: Any) -> TaskRecord:
            before[:] = [current]
            # The counts the worker saved live, which the signal below overwrites: kept in the record.
            return lifecycle.cancel(current, now, by=actor.name, seen=seen, attempt=looked.attempt_id)

        record = self.records.update(task_id, change)
        metrics.cancelled(record.task_type)
        # The worker of a running task notices within seconds (s3task.live); if we die before
        # this, its next heartbeat does.
        live.signal_cancel(self.store, self.layout, before[-1], actor.name)
        # Record first, then the marker: a crash in between leaves a stale
        # marker, which the next poll removes.
        self.store.delete(self.layout.active_key(task_id))
        return record

    def retry(self, actor: Actor, task_id: str) -> TaskRecord:
        record = self.get(actor, task_id)
        self._require(actor, record, "retry")
        if record.status != lifecycle.Status.FAILED:
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

    # --- output ------------------------------------------------------------

    def _completed(self, actor: Actor, task_id: str) -> tuple[TaskRecord, str]:
        """The completed task and its output's key, if ``actor`` may read it."""
        record = self.get(actor, task_id)
        self._require(actor, record, "download the output of")
        if record.status != lifecycle.Status.COMPLETED or not record.output_object_path:
            raise InvalidTransition(f"there is no output yet: {lifecycle.describe(record)}")
        return record, record.output_object_path

    def output_filename(self, record: TaskRecord, variant: exports.Variant = "csv") -> str:
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", record.task_name).strip("-.")[:60] or "output"
        suffix = {"csv": ".csv", "exact": "-exact.csv", "errors": "-errors.csv", "xlsx": ".xlsx"}[variant]
        return f"{stem}-{record.task_id[-6:].lower()}{suffix}"

    def output_url(self, actor: Actor, task_id: str, variant: exports.Variant = "csv") -> str | None:
        """A short-lived download URL, or None if the store has none (stream with open_output).

        A copy (``variant`` other than ``csv``, see :mod:`s3task.exports`) must have been made
        first (:meth:`prepare_output`, :meth:`ensure_output`); else :class:`~s3task.exports.NotReady`.
        """
        record, key = self._variant(actor, task_id, variant)
        if variant != "csv" and self.export_state(actor, task_id, variant).kind != "ready":
            raise exports.NotReady(f"the {exports.LABELS[variant]} is not made yet; ask for it to be prepared first")
        filename = self.output_filename(record, variant)
        url = self.store.presign_get(key, expires=self.url_seconds, filename=filename)
        if url is None and self.url_signer is not None:
            url = self.url_signer.presign_get(key, expires=self.url_seconds, filename=filename)
        return url

    @contextlib.contextmanager
    def open_output(self, actor: Actor, task_id: str, variant: exports.Variant = "csv") -> Iterator[BinaryIO]:
        """The output (or a copy of it that has been made) as a stream."""
        _, key = self._variant(actor, task_id, variant)
        with self.store.open_read(key) as f:
            yield f

    def _variant(self, actor: Actor, task_id: str, variant: exports.Variant) -> tuple[TaskRecord, str]:
        if variant not in exports.VARIANTS:
            raise InvalidInput(f"no download called {variant!r}: use one of {', '.join(exports.VARIANTS)}")
        record, _ = self._completed(actor, task_id)
        return record, exports.variant_keys(self.layout, record)[variant]

    def _error_column(self, record: TaskRecord) -> str | None:
        try:
            return handlers.get(record.task_type).error_column
        except S3TaskError:  # a task type whose module is not loaded here: the usual column, if the file has one
            return handlers.ERROR_COLUMN

    def export_state(self, actor: Actor, task_id: str, variant: exports.Variant) -> exports.State:
        """Whether a copy of the output is made, being made, failed, not asked for, or cannot be made."""
        record, key = self._variant(actor, task_id, variant)
        if variant == "csv":
            return exports.State("ready")
        try:
            exports.check_possible(record, variant, self._error_column(record))
        except exports.CannotExport as e:
            return exports.State("refused", message=e.message)
        return self.exports.state(key)

    def prepare_output(self, actor: Actor, task_id: str, variant: exports.Variant) -> exports.State:
        """Start making a copy of the output in the background, unless it is made or being made."""
        state = self.export_state(actor, task_id, variant)
        if state.kind in ("absent", "failed"):
            record, key = self._variant(actor, task_id, variant)
            self.exports.start(key, self._maker(record, variant, key))
            return exports.State("preparing")
        return state

    def ensure_output(
        self, actor: Actor, task_id: str, variant: exports.Variant, *, timeout: float | None = None
    ) -> None:
        """Make a copy of the output now if it is not made yet, waiting for it; raises why it cannot be.

        ``timeout``: wait at most this long, then raise :class:`OutputPreparing` while it goes on being made.
        """
        record, key = self._variant(actor, task_id, variant)
        if variant == "csv":
            return
        exports.check_possible(record, variant, self._error_column(record))
        self.exports.wait(key, self._maker(record, variant, key), timeout)

    def _maker(self, record: TaskRecord, variant: exports.Variant, key: str) -> Callable[[], ObjectMeta]:
        error_column = self._error_column(record)
        return lambda: exports.make(self.store, record, variant, key, error_column=error_column)

    def read_output(
        self, actor: Actor, task_id: str, rows: int = 100, *, errors_only: bool = False, exact: bool = False
    ) -> pd.DataFrame:
        """The first ``rows`` output rows (only rows with an error, if asked), read as text.

        ``exact``: the values as the task produced them, without the ``'`` the file has before
        values a spreadsheet would run (see :mod:`s3task.exports`).
        """
        with self.open_output(actor, task_id) as raw:
            legacy, f = exports.peek_bom(raw)
            frame = self._read_rows(f, rows, errors_only)
        return exports.exact_frame(frame, legacy=legacy) if exact else frame

    @staticmethod
    def _read_rows(f: Any, rows: int, errors_only: bool) -> pd.DataFrame:
        import pandas as pd

        if not errors_only:
            return pd.read_csv(f, nrows=rows, dtype=str, keep_default_na=False)
        found: list[pd.DataFrame] = []
        total = 0
        for chunk in pd.read_csv(f, chunksize=10_000, dtype=str, keep_default_na=False):
            if handlers.ERROR_COLUMN not in chunk.columns:
                return chunk.iloc[0:0]
            bad = chunk[chunk[handlers.ERROR_COLUMN] != ""]
            found.append(bad)
            total += len(bad)
            if total >= rows:
                break
        return pd.concat(found).head(rows) if found else pd.DataFrame()
