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
    kind = handlers.get(task_type)
    # A lookup holds its table while the file streams past, so its rows are capped; a comparison (its
    # type ``reads_itself``) loads both results into DuckDB, spilling to disk, so they are not.
    verb, cap = ("compare", None) if kind.reads_itself else ("look up from", MAX_REFERENCE_ROWS)
    for who, task_id in kind.references(params):
        check_reference(actor, who, task_id, read, verb=verb, max_rows=cap)


def check_reference(
    actor: Actor,
    who: str,
    task_id: str,
    read: Callable[[str], TaskRecord],
    *,
    verb: str = "look up from",
    max_rows: int | None = MAX_REFERENCE_ROWS,
) -> None:
    """One: ``who`` (the step's label) is what reads it, to ``verb`` it; a result over ``max_rows`` is refused."""
    try:
        validate_task_id(task_id)
        record = read(task_id)
    except (InvalidTaskId, TaskNotFound) as e:
        raise InvalidInput(f"{who}: there is no task {task_id!r} to {verb}") from e
    access.require(actor, record, verb)
    if record.status != Status.COMPLETED:
        raise InvalidInput(f"{who}: task {task_id} has no result to {verb} (it is {record.status.value})")
    if max_rows is not None and (record.row_count or 0) > max_rows:
        raise InvalidInput(
            f"{who}: task {task_id}'s result has {record.row_count:,} rows; a lookup takes at most "
            f"{MAX_REFERENCE_ROWS:,}"
        )


def check_lookup(actor: Actor, who: str, task_id: str, read: Callable[[str], TaskRecord]) -> None:
    """:func:`check_reference` for a lookup: its cap read when asked (as :func:`check_references` reads it)."""
    check_reference(actor, who, task_id, read, max_rows=MAX_REFERENCE_ROWS)
