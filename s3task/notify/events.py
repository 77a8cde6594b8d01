"""What a notification says: the event built from a record write, and who gets an email about it.

An event is built by the process whose compare-and-set made the state change, from the record it
read (``old``) and the record it wrote (``new``). Its id is ``<task-id>.<revision>``: a record
revision is written by exactly one winner, so the id names one state change, and every copy of
it (a retry, a re-send after a crash) carries the same id.
"""

from __future__ import annotations

import re
from typing import Any

from ..counts import Counts, counts_of, phrase
from ..record import TaskRecord

#: The lifecycle action of a write (its history entry) -> the event type.
EVENT_TYPES = {
    "submit": "task.submitted",
    "claim": "task.started",
    "release": "task.released",
    "complete": "task.completed",
    "fail": "task.failed",
    "retry": "task.retried",
    "cancel": "task.cancelled",
}
#: What an address must look like before a task's owner is emailed (created_by is the user's name:
#: a verified email from the identity provider, or something else, then there is no email).
EMAIL = re.compile(r"[^@\s<>,;\"'()\[\]\\]+@[^@\s<>,;\"'()\[\]\\]+\.[^@\s<>,;\"'()\[\]\\]+")
_CANCELLED_BY = "cancelled by "


def event_id(task_id: str, revision: int) -> str:
    return f"{task_id}.{revision}"


def build(old: TaskRecord, new: TaskRecord) -> dict[str, Any]:
    """The JSON event for the write that turned ``old`` into ``new`` (a change of state)."""
    entry = new.history[-1] if new.history else {}
    action = str(entry.get("event", ""))
    event: dict[str, Any] = {
        "id": event_id(new.task_id, new.revision),
        "type": EVENT_TYPES.get(action, f"task.{new.state.value}"),
        "occurred_at": new.updated_at,
        "previous_state": old.state.value,
        "task": {
            "id": new.task_id,
            "name": new.task_name,
            "type": new.task_type,
            "status": new.status.value,
            "state": new.state.value,
            "final": new.final,
            "created_by": new.created_by,
            "attempt": new.attempt_id,
            "max_attempts": new.max_attempts,
            "failed_attempts": new.failed_attempts,
            "revision": new.revision,
            "counts": {
                "rows": new.row_count,
                "processed": new.processed_count,
                "succeeded": new.success_count,
                "errors": new.error_count,
            },
            # What the app, the CLI and the API show (s3task.counts): the words of every text below.
            "row_counts": {**counts_of(new).as_dict(), "summary": counts_of(new).summary},
            "created_at": new.created_at,
            "queued_at": new.queued_at,
            "started_at": new.started_at,
            "finished_at": new.finished_at,
            "updated_at": new.updated_at,
            "last_error": new.last_error,
        },
    }
    note = str(entry.get("note") or "")
    if action == "cancel" and note.startswith(_CANCELLED_BY):
        event["cancelled_by"] = note[len(_CANCELLED_BY) :]
    return event


def ends(event: dict[str, Any]) -> bool:
    """Did the task end with this event (completed, failed for good, cancelled)?"""
    return str(event["task"]["state"]) in ("completed", "failed_for_good", "abandoned")


def email_to(event: dict[str, Any]) -> str | None:
    """The owner's address when they should get an email about this event, else None.

    One email per ending: completed, failed for good, or cancelled by someone else. Not while the
    task can still go on by itself, not when the owner cancelled it, and not when the owner's name
    is not an email address.
    """
    if not ends(event):
        return None
    owner = str(event["task"]["created_by"])
    if EMAIL.fullmatch(owner) is None:
        return None
    if event.get("cancelled_by") == owner:
        return None
    return owner


def summary(event: dict[str, Any]) -> str:
    """ "March customer list — completed, 1,000 rows read, 1,000 rows written, 205 rows with errors"."""
    task = event["task"]
    name = " ".join(str(task["name"]).split())
    return f"{name} — {outcome(event)}"


def counts(event: dict[str, Any]) -> Counts | None:
    """The task's counts as :func:`s3task.counts.counts_of` gave them when the event was built."""
    found = event["task"].get("row_counts")
    if not isinstance(found, dict):
        return None  # an event from before row_counts (re-sent from an old outbox entry)
    try:
        return Counts(**found)
    except TypeError:
        return None


def count_lines(event: dict[str, Any]) -> list[tuple[str, str]]:
    """(words, number) of each count the task's page shows: "Rows read", "202"; none not known yet."""
    found = counts(event)
    return [(label, value) for label, value in found.lines() if value != "–"] if found else []


def outcome(event: dict[str, Any]) -> str:
    """ "completed, 202 rows read, 50 rows written, 152 rows left out": the page's words and numbers."""
    task = event["task"]
    state = task["state"]
    if state == "completed":
        shown = ", ".join(phrase(label, value) for label, value in count_lines(event))
        return f"completed, {shown}" if shown else "completed"
    if state == "failed_for_good":
        return "failed"
    if state == "abandoned":
        who = event.get("cancelled_by")
        return f"cancelled by {who}" if who else "cancelled"
    return str(state).replace("_", " ")
