"""The one table of a task's allowed transitions, and :func:`move`, the only place a record changes state."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import InvalidTransition
from ..record import HISTORY_LIMIT, TaskRecord, new_write_id, to_iso
from ..states import State

#: The one table of allowed transitions: (from, to) -> action. "Failed for good" is a state of its
#: own (derived from ``failed`` + ``final``): it is terminal, and only a person's retry leaves it.
TRANSITIONS: dict[tuple[State, State], str] = {
    (State.CREATED, State.CREATED): "upload",
    (State.CREATED, State.QUEUED): "submit",
    (State.QUEUED, State.RUNNING): "claim",
    (State.RUNNING, State.RUNNING): "heartbeat",
    (State.RUNNING, State.QUEUED): "release",
    (State.RUNNING, State.COMPLETED): "complete",
    (State.RUNNING, State.FAILED): "fail",
    (State.RUNNING, State.FAILED_FOR_GOOD): "fail",
    (State.FAILED, State.QUEUED): "retry",
    (State.FAILED_FOR_GOOD, State.QUEUED): "retry",
    (State.CREATED, State.ABANDONED): "cancel",
    (State.QUEUED, State.ABANDONED): "cancel",
    (State.RUNNING, State.ABANDONED): "cancel",
    (State.FAILED, State.ABANDONED): "cancel",
    (State.COMPLETED, State.COMPLETED): "correct",
}

_WHAT_NEXT = {
    State.CREATED: "it can be submitted or cancelled",
    State.QUEUED: "it is waiting for a worker; it can be cancelled",
    State.RUNNING: "a worker is processing it; it can be cancelled",
    State.COMPLETED: "it is finished; its output can be downloaded",
    State.FAILED: "it can be retried or cancelled",
    State.FAILED_FOR_GOOD: "a retry gives it one more attempt",
    State.ABANDONED: "nothing more can be done with it",
}
#: A state in the words of a sentence, where its value is not the word ("abandoned": the task was cancelled).
_IS = {State.FAILED_FOR_GOOD: "has failed for good", State.ABANDONED: "is cancelled"}


def allows(record: TaskRecord, action: str) -> bool:
    """Does the table allow ``action`` (``"cancel"``, ``"retry"``…) from the record's state?"""
    return any(name == action and source is record.state for (source, _), name in TRANSITIONS.items())


def describe(record: TaskRecord) -> str:
    state = record.state
    return f"task {record.task_id} {_IS.get(state, f'is {state.value}')}; {_WHAT_NEXT[state]}"


def move(record: TaskRecord, target: State, now: datetime, event: str, **changes: Any) -> TaskRecord:
    """The only place a record changes state: checks the table, stamps the write.

    The table is checked for the action too, not just for (from, to): ``submit``
    of a running task must not pass as a ``release`` (both are running → queued).
    """
    if TRANSITIONS.get((record.state, target)) != event:
        raise InvalidTransition(f"cannot {event} {describe(record)}")
    stamp = to_iso(now)
    entry = {"at": stamp, "event": event, "attempt": changes.get("attempt_id", record.attempt_id)}
    note = changes.pop("_note", None)
    if note:
        entry["note"] = note[:500]
    # No history entry for what is no step of the task's own (a correction's record is its corrections list).
    history = record.history if event in ("heartbeat", "correct") else [*record.history, entry][-HISTORY_LIMIT:]
    return record.replace(
        status=target.status,
        final=target.final,
        revision=record.revision + 1,
        write_id=new_write_id(),
        updated_at=stamp,
        history=history,
        **changes,
    )
