"""Looking at tasks, as anyone may: one task, or the newest first a page at a time. A look keeps a finished
record (it never changes again, but for a completed task's corrections listed on it: ``fresh`` reads it
anew), lays a running attempt's live counts over its record, and gives a pending task that lost its
``active/`` marker its marker back.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .. import live, markers
from ..errors import InvalidInput, InvalidTaskId, NotFound, RecordError, S3TaskError, TaskNotFound
from ..ids import validate_task_id
from ..record import TaskRecord, parse_iso
from ..records import Records
from ..states import State, Status
from .access import Actor
from .limits import SizedCache, record_bytes

log = logging.getLogger("s3task.tasks")

MAX_LIST = 200
#: Seconds a pending task may sit untouched before a reader checks that workers can still find it.
MARKER_CHECK_AFTER = 60.0
#: Finished records a service keeps (they never change but for a completed task's corrections listed on it:
#: whoever shows those reads it fresh, ``get(fresh=True)``; older ones are read again).
REMEMBERED_FINISHED = 5000
REMEMBERED_FINISHED_BYTES = 16 * 1024 * 1024
_READERS = 16


@dataclass
class Page:
    tasks: list[TaskRecord]
    next_cursor: str | None
    #: Tasks whose record could not be read, with the reason (skipped, never rewritten).
    problems: list[str] = field(default_factory=list)


class Looking:
    """See the module. ``records``: where the records are read."""

    def __init__(self, records: Records) -> None:
        self.records = records
        self.store, self.layout = records.store, records.layout
        # Completed and abandoned records never change again: cache them (the newest, up to a byte total).
        self._finished: SizedCache[TaskRecord] = SizedCache(REMEMBERED_FINISHED, REMEMBERED_FINISHED_BYTES)
        self._lock = threading.Lock()
        #: When each pending task's marker was last checked (monotonic seconds).
        self._marker_checked: dict[str, float] = {}

    def get(self, actor: Actor, task_id: str, *, fresh: bool = False) -> TaskRecord:
        """Anyone may look at a task; acting on it is checked per action. ``fresh``: read it from the store even
        if it is finished and kept here (a completed task may have had corrections listed on it since)."""
        validate_task_id(task_id)
        cached = None if fresh else self._finished.get(task_id)
        if cached is not None:
            return cached
        record, _ = self.records.read(task_id)
        if record.status in (Status.COMPLETED, Status.ABANDONED):
            self._finished.put(task_id, record, record_bytes(record))
        elif record.state in (State.QUEUED, State.FAILED):
            self._check_marker(record)
        elif record.status == Status.RUNNING:
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
        records, problems = self.read_many(actor, page_ids)
        next_cursor = page_ids[-1] if len(ids) > limit else None
        return Page(records, next_cursor, problems)

    def read_many(self, actor: Actor, ids: builtins.list[str]) -> tuple[builtins.list[TaskRecord], builtins.list[str]]:
        """The records of ``ids`` read at once (a few at a time), and a reason for each one that could not be read;
        an id whose record never came to be is left out."""

        def one(task_id: str) -> TaskRecord | str | None:
            try:
                return self.get(actor, task_id)
            except TaskNotFound:
                return None  # a marker whose create never finished
            except RecordError as e:
                return f"{task_id}: {e}"

        with ThreadPoolExecutor(max_workers=min(_READERS, max(1, len(ids)))) as pool:
            results = builtins.list(pool.map(one, ids))
        records = [r for r in results if isinstance(r, TaskRecord)]
        problems = [r for r in results if isinstance(r, str)]
        return records, problems
