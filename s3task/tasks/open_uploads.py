"""How many uploads in parts may be open at once, per task and per user.

An open upload in parts holds what was sent of a file, billed, until it is joined or aborted, or until
the bucket's rule drops it after a day. Only the rate of creates used to bound them: fifty started on
one task stayed open after its cancel. Now each new one is counted just after it starts, in the store's
own list of open uploads (S3's ListMultipartUploads under the prefix, every page; the input's uploads
only, not a worker's output):

- **Per task: at most** :data:`MAX_OPEN_UPLOADS_PER_TASK` **(2).** A task needs one at a time: the one
  noted on it, which every continue reuses (a new one starts only once that one is gone). The second is
  room for two windows that start at the same moment.
- **Per user: at most** ``S3TASK_MAX_OPEN_UPLOADS`` **(10 by default, 0: no limit)** on the tasks of
  one user, whoever starts them. A person sends one file at a time from a page; ten leaves room for a
  few pages and a script sending several files at once. The records of other tasks with open uploads
  are read only when the whole list holds more than the limit.

The upload that goes past a bound is aborted at once and refused in words that say what to do
(:class:`~s3task.errors.TooManyUploads`). Counted after the start, two uploads started at the same
moment each see the other: both may be refused, neither is let past. Where the store cannot list
uploads (Azure, which keeps none to list; a role without ``s3:ListBucketMultipartUploads``), the start
goes through and the log says so: the bucket's rule is then the only bound. A cancel aborts every open
upload of the task (:mod:`.unsent`).
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter

from ..errors import S3TaskError, StoreError, TooManyUploads
from ..layout import Layout
from ..record import TaskRecord
from ..store.base import MultipartStore, OpenUploads
from .access import Actor
from .transitions import Transitions

log = logging.getLogger(__name__)

#: Open uploads in parts one task may have (see the module).
MAX_OPEN_UPLOADS_PER_TASK = 2


def check_started(transitions: Transitions, actor: Actor, record: TaskRecord, upload_id: str) -> None:
    """The upload ``upload_id``, just started for ``record``'s input, aborted and refused in words if it
    takes the task or its owner past a bound."""
    store, layout = transitions.store, transitions.layout
    if not isinstance(store, OpenUploads) or not isinstance(store, MultipartStore):
        return
    try:
        listed = store.open_uploads(layout.root)
    except StoreError as e:
        log.warning("the open uploads could not be counted (%s): task %s's upload goes unbounded", e, record.task_id)
        return
    by_task = Counter(t for key, _ in listed if (t := _task_of_input(layout, key)))
    by_task[record.task_id] = max(by_task[record.task_id], 1)  # ours, whatever a listing a moment late says
    refusal = _past_task_bound(record, by_task[record.task_id]) or _past_user_bound(transitions, actor, record, by_task)
    if refusal:
        with contextlib.suppress(S3TaskError):  # else the bucket's rule drops it
            store.abort_multipart(record.input_object_path, upload_id)
        raise TooManyUploads(refusal)


def _task_of_input(layout: Layout, key: str) -> str | None:
    """The task whose input ``key`` is (None for any other key: an attempt's output, a copy)."""
    task_id = layout.task_id_of(key.rsplit("/", 1)[0])
    return task_id if task_id and key == layout.input_key(task_id) else None


def _past_task_bound(record: TaskRecord, count: int) -> str:
    if count <= MAX_OPEN_UPLOADS_PER_TASK:
        return ""
    return (
        f"task {record.task_id} already has {count - 1} uploads in parts open, the most one task may have: "
        "continue its upload (send the same file again) or cancel the task, which drops what was sent"
    )


def _past_user_bound(transitions: Transitions, actor: Actor, record: TaskRecord, by_task: Counter[str]) -> str:
    limit = transitions.limits.open_uploads
    if limit <= 0 or sum(by_task.values()) <= limit:
        return ""
    owner = record.created_by
    others = [t for t in by_task if t != record.task_id]
    records, _ = transitions.looking.read_many(actor, others)
    count = by_task[record.task_id] + sum(by_task[r.task_id] for r in records if r.created_by == owner)
    if count <= limit:
        return ""
    who = "you have" if owner == actor.name else f"{owner} has"
    return (
        f"{who} {count - 1} uploads in parts open, the most allowed (S3TASK_MAX_OPEN_UPLOADS={limit}): continue "
        "one of them (send the same file again) or cancel its task, which drops what was sent, then try again"
    )
