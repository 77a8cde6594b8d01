"""The ``active/`` index: zero-byte markers that say "this task may need attention", and its bell.

Markers are only an index; ``status.json`` decides. A marker is written
before a task becomes pending (submit, retry) and removed only once the task
is terminal.

The bell (``<prefix>/active-bell``) is rung — overwritten with new bytes, so its
ETag changes — *after* the marker and record writes that make a task claimable
(submit, retry, a marker put back, ``repair``). An idle worker HEADs the bell each
poll and lists ``active/`` only when its ETag changed since its last listing, while
its last listing found work in progress, or every ``idle_list_seconds`` as a safety
net (s3task.worker.loop). A failed ring is logged and costs at most that interval.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable

from .errors import MarkerLost, NotFound, S3TaskError, StoreError, TaskNotFound
from .layout import Layout
from .record import TaskRecord
from .records import read_record
from .states import State
from .store.base import ObjectStore, PutMode

log = logging.getLogger("s3task.markers")


def ring(store: ObjectStore, layout: Layout, why: str = "") -> bool:
    """Overwrite the bell: tell idle workers to list ``active/``. Never raises; False if it failed.

    Call it after the writes it announces. The body is new every time (so is its ETag,
    which is all a worker compares); a failure is logged and the workers' safety-net
    listing picks the task up instead, so a ring never fails the operation around it.
    """
    body = json.dumps({"at": time.time(), "why": why, "nonce": os.urandom(8).hex()}).encode()
    try:
        store.put(layout.bell_key, body, PutMode.OVERWRITE, content_type="application/json")
        return True
    except Exception as e:  # best effort by design: the marker and the record are what count
        log.warning("could not ring the active-bell (%s): idle workers see it at their next safety-net listing", e)
        return False


def add(store: ObjectStore, layout: Layout, task_id: str) -> None:
    store.put(layout.active_key(task_id), b"", PutMode.OVERWRITE)


def add_again(store: ObjectStore, layout: Layout, task_id: str, tries: int = 3) -> None:
    """Re-add the marker of a task just brought back to the queue, through brief store trouble."""
    for attempt in range(1, tries + 1):
        try:
            add(store, layout, task_id)
            return
        except StoreError:
            if attempt == tries:
                raise
            time.sleep(0.05 * attempt)


def drop(store: ObjectStore, layout: Layout, task_id: str) -> None:
    """Remove a terminal task's marker — and put it back if the task came alive meanwhile.

    A person may retry a task that has failed for good at any moment: the
    retry writes the marker, then the queued record. Our delete can land
    between the two, or after both; markers are all empty, so a conditional
    delete cannot tell ours from theirs. Reading the record after the delete
    closes the gap: a pending task always ends up with its marker. Putting it
    back is retried like every marker write; if it still fails, :class:`MarkerLost`
    says so (the caller keeps the task id and tries again on its next poll).
    """
    store.delete(layout.active_key(task_id))
    try:
        record, _ = read_record(store, layout, task_id)
    except TaskNotFound:
        return
    except S3TaskError:
        # Cannot tell whether a retry came in: put the marker back. A stale marker costs a
        # read per poll until the next drop; a missing one hides a pending task from every worker.
        restore(store, layout, task_id)
        raise
    if not record.is_terminal:
        restore(store, layout, task_id)


def restore(store: ObjectStore, layout: Layout, task_id: str) -> None:
    """Put back the marker of a task that may be pending; :class:`MarkerLost` if the store keeps refusing."""
    try:
        add_again(store, layout, task_id)
        ring(store, layout, "restore")  # an idle worker may have listed while the marker was away
    except S3TaskError as e:
        log.error(
            "task %s may be pending but its active/ marker could not be put back (%s); it is retried, "
            "and `python -m s3task repair` restores it too",
            task_id,
            e,
            extra={"task_id": task_id},
        )
        raise MarkerLost(f"could not put back the active/ marker of {task_id}: {e}") from e


def repair(
    store: ObjectStore, layout: Layout, each: Callable[[TaskRecord], object] | None = None
) -> tuple[int, int, list[str]]:
    """Make ``active/`` agree with the records: pending tasks marked, terminal ones not.

    Scans every task prefix, so its cost grows with history: an operator runs
    it rarely (``python -m s3task repair``); no poll does this. ``each`` is shown
    every record read (the CLI's repair also drops what cancelled uploads left).
    Returns (markers added, markers removed, unreadable records).
    """
    marked = {layout.task_id_of(k) for k in store.list_keys(layout.active_root)}
    added = removed = 0
    problems: list[str] = []
    for prefix in store.list_prefixes(layout.root):
        task_id = layout.task_id_of(prefix)
        if not task_id:
            continue
        try:
            record, _ = read_record(store, layout, task_id)
        except TaskNotFound:
            continue
        except S3TaskError as e:
            problems.append(str(e))
            continue
        if each is not None:
            each(record)
        if not record.is_terminal and record.state is not State.CREATED and task_id not in marked:
            add(store, layout, task_id)
            added += 1
        elif record.is_terminal and task_id in marked:
            drop(store, layout, task_id)
            removed += 1
    for task_id in marked:
        if task_id and not _exists(store, layout, task_id):
            store.delete(layout.active_key(task_id))
            removed += 1
    ring(store, layout, "repair")  # whatever it added: idle workers list now, not at their safety net
    return added, removed, problems


def _exists(store: ObjectStore, layout: Layout, task_id: str) -> bool:
    # Only a definite "not found" may cost a marker; a timeout or a refusal stops the repair.
    try:
        store.head(layout.status_key(task_id))
        return True
    except NotFound:
        return False
