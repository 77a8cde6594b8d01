"""Other tasks a new task reads (a step list's lookup tables): checked when the task is made, as its maker."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .. import handlers
from ..errors import InvalidInput, InvalidTaskId, TaskNotFound
from ..ids import validate_task_id
from ..record import TaskRecord
from ..states import Status
from ..steps.wholefile import MAX_REFERENCE_ROWS
from . import access
from .access import Actor


def check_references(
    actor: Actor, task_type: str, params: Mapping[str, Any], read: Callable[[str], TaskRecord]
) -> None:
    """Each task the parameters name exists, has a result, and is ``actor``'s to read (or they operate)."""
    for who, task_id in handlers.get(task_type).references(params):
        check_reference(actor, who, task_id, read)


def check_reference(actor: Actor, who: str, task_id: str, read: Callable[[str], TaskRecord]) -> None:
    """One: ``who`` (the step's label) is what reads it."""
    try:
        validate_task_id(task_id)
        record = read(task_id)
    except (InvalidTaskId, TaskNotFound) as e:
        raise InvalidInput(f"{who}: there is no task {task_id!r} to look up from") from e
    access.require(actor, record, "look up from")
    if record.status != Status.COMPLETED:
        raise InvalidInput(f"{who}: task {task_id} has no result to look up from (it is {record.status.value})")
    if (record.row_count or 0) > MAX_REFERENCE_ROWS:
        raise InvalidInput(
            f"{who}: task {task_id}'s result has {record.row_count:,} rows; a lookup takes at most "
            f"{MAX_REFERENCE_ROWS:,}"
        )
