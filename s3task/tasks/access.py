"""Who may act on a task: its owner, or an operator. Anyone may look at one."""

from __future__ import annotations

from dataclasses import dataclass

from .. import lifecycle, safetext
from ..errors import AccessDenied
from ..record import TaskRecord


@dataclass(frozen=True)
class Actor:
    """Who is asking. Operators may act on every task; others on their own."""

    name: str
    operator: bool = False

    def __post_init__(self) -> None:
        # Names reach terminals and logs (``s3task list``): no control or invisible characters (safetext).
        if not self.name or len(self.name) > 200 or safetext.unsafe_character(self.name):
            raise AccessDenied("a user name is required (printable, at most 200 characters)")


def may_act(actor: Actor, record: TaskRecord) -> bool:
    return actor.operator or record.created_by == actor.name


def require(actor: Actor, record: TaskRecord, action: str) -> None:
    """:class:`AccessDenied`, in words that say whose the task is, unless ``actor`` may ``action`` it."""
    if not may_act(actor, record):
        raise AccessDenied(
            f"task {record.task_id} belongs to {record.created_by}; only they or an operator can {action} it"
        )


def can_cancel(actor: Actor, record: TaskRecord) -> bool:
    return may_act(actor, record) and lifecycle.allows(record, "cancel")


def can_retry(actor: Actor, record: TaskRecord) -> bool:
    return may_act(actor, record) and lifecycle.allows(record, "retry")
