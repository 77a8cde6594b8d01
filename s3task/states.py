"""The task's states: what ``status.json`` stores, and the state the lifecycle table speaks.

The record stores a :class:`Status`; a failed task also stores ``final``. The
lifecycle (``s3task.lifecycle``) works on the :class:`State` derived from both,
which has "failed for good" as a state of its own, so every question of the
kind "is it over?", "will it change by itself?" is answered here, from one
place, rather than by ``status == "failed" and final`` checks scattered around.

This module imports nothing from the rest of s3task: the record and the
lifecycle both build on it.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """The ``status`` field of a task record."""

    CREATED = "created"  # record exists; the input may still be uploading
    QUEUED = "queued"  # input pinned; waiting for a worker
    RUNNING = "running"  # a worker holds the lease
    COMPLETED = "completed"  # output written
    FAILED = "failed"  # an attempt failed; ``final`` says whether it will be retried
    ABANDONED = "abandoned"  # cancelled


class State(StrEnum):
    """A record's place in the lifecycle: its status, with failed split by ``final``."""

    CREATED = "created"
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"  # terminal
    FAILED = "failed"  # waiting for its automatic retry
    FAILED_FOR_GOOD = "failed_for_good"  # attempts used up or bad input (terminal; a person may retry)
    ABANDONED = "abandoned"  # terminal

    @property
    def status(self) -> Status:
        """What the record stores for this state."""
        return Status.FAILED if self is State.FAILED_FOR_GOOD else Status(self.value)

    @property
    def final(self) -> bool:
        """The record's ``final`` flag in this state."""
        return self is State.FAILED_FOR_GOOD

    @property
    def terminal(self) -> bool:
        """Nothing happens to the task by itself any more; its ``active/`` marker goes."""
        return self in _TERMINAL

    @property
    def live(self) -> bool:
        """The record changes without anyone acting (a page showing it should refresh)."""
        return self in _LIVE


_TERMINAL = frozenset({State.COMPLETED, State.FAILED_FOR_GOOD, State.ABANDONED})
_LIVE = frozenset({State.QUEUED, State.RUNNING, State.FAILED})


def state_of(status: Status | str, final: bool) -> State:
    status = Status(status)
    if status is Status.FAILED and final:
        return State.FAILED_FOR_GOOD
    return State(status.value)
