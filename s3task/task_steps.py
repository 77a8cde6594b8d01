"""A task's step list, kept in an object of its own beside its record (``<task>/steps.json``), pinned in
the record by ETag (``TaskRecord.steps_etag``): a list of up to 48 KiB does not meet the parameters cap of
the record, and the list a worker runs is the one the task was made with, never one changed since.

Made before the record (create-only), so a task whose record exists has its list: a maker that dies in
between leaves a list no record names, which nothing reads (the store's retention rule removes it with the
task's folder). Making it again with the same list (an inbox sweeper taking over a claim) finds the one
written and uses it; a different list under the same task is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import AlreadyExists, InvalidInput, NotFound, PreconditionFailed
from .store.base import PutMode

if TYPE_CHECKING:
    from .layout import Layout
    from .record import TaskRecord
    from .store.base import ObjectStore

#: The parameter kept apart (a handler's parameter of type "steps").
KEPT = "steps"
JSON_TYPE = "application/json"


def split(params: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """The parameters the record keeps, and the step list kept beside it (None: there is none)."""
    rest = {k: v for k, v in params.items() if k != KEPT}
    return rest, params.get(KEPT)


def keep(store: ObjectStore, layout: Layout, task_id: str, steps: Any) -> str:
    """Write task ``task_id``'s step list (create-only); its ETag, which the record pins."""
    body = json.dumps({KEPT: steps}, ensure_ascii=False, separators=(",", ":")).encode()
    key = layout.steps_key(task_id)
    try:
        return store.put(key, body, PutMode.CREATE, content_type=JSON_TYPE)
    except AlreadyExists:
        got = store.get(key)
        if got.body != body:
            raise
        return got.etag  # ours, or the same list made by a maker before us (whose record may not exist yet)


def params_of(store: ObjectStore, layout: Layout, record: TaskRecord) -> dict[str, Any]:
    """Every parameter of ``record``'s task: its step list read from beside it, at the ETag it pins."""
    return with_steps(store, layout, record.task_id, record.payload, record.steps_etag)


def with_steps(
    store: ObjectStore, layout: Layout, task_id: str, payload: Mapping[str, Any], steps_etag: str | None
) -> dict[str, Any]:
    """``payload`` with the step list of task ``task_id`` read at ``steps_etag`` (None: ``payload`` as it is).
    A list gone, changed or unreadable is :class:`InvalidInput`: the task cannot run as it was made."""
    params = dict(payload)
    if steps_etag is None:
        return params
    key = layout.steps_key(task_id)
    try:
        got = store.get(key, if_match=steps_etag)
    except NotFound as e:
        raise InvalidInput(f"the task's list of steps ({key}) is gone from the store; make the task again") from e
    except PreconditionFailed as e:
        raise InvalidInput(
            f"the task's list of steps ({key}) was changed after the task was made; make the task again"
        ) from e
    try:
        params[KEPT] = json.loads(got.body)[KEPT]
    except (ValueError, TypeError, KeyError) as e:
        raise InvalidInput(f"the task's list of steps ({key}) is not a list of steps") from e
    return params
