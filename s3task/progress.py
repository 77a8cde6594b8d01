"""How far an attempt has got: one type from the engine, over the child's pipe, into the record."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class Progress:
    """Counts of one attempt (the engine keeps one and hands out copies)."""

    #: Input data rows consumed (blank lines are not rows).
    processed_count: int = 0
    #: Output rows whose error cell is empty.
    success_count: int = 0
    #: Output rows with an error.
    error_count: int = 0
    #: Input bytes consumed by the rows processed so far (exact; the input size at the end).
    bytes_processed: int = 0
    #: Output data rows written (handed to the writer; all written once the engine returns).
    row_count: int = 0
    #: Output cells given a leading ``'`` so that a spreadsheet shows them as text (formula protection).
    protected_count: int = 0
    #: A step list's effect, one entry a step that ran: {"step", "rows_in", "rows_out", "cells_changed"} over
    #: the whole file (s3task.handlers.steps); known when the attempt ends, else empty.
    steps: list[dict[str, int]] = field(default_factory=list)

    def add(self, rows: int, errors: int) -> None:
        """Count output rows handed to the writer, ``errors`` of them with an error."""
        self.row_count += rows
        self.error_count += errors
        self.success_count += rows - errors

    def running_counters(self) -> dict[str, Any]:
        """What a heartbeat (and a failed attempt) writes into the record: every count so far.

        ``row_count`` too: while the task runs it is the output rows written so
        far, so "rows written" and "rows left out" can be shown before the end.
        A step list's counts (``step_counts``) once they are known.
        """
        steps = {"step_counts": [dict(s) for s in self.steps]} if self.steps else {}
        return {
            **steps,
            "processed_count": self.processed_count,
            "success_count": self.success_count,
            "error_count": self.error_count,
            "bytes_processed": self.bytes_processed,
            "row_count": self.row_count,
            "protected_count": self.protected_count,
        }


#: The names of the counts (every field but ``steps``): what the live progress object and a cancel carry.
COUNTS = tuple(f.name for f in fields(Progress) if f.name != "steps")


def counts_from(source: object) -> Progress:
    """The counts of anything that has them as attributes (a task record), a missing one as 0."""
    progress = Progress()
    for name in COUNTS:
        setattr(progress, name, int(getattr(source, name, 0) or 0))
    return progress


# --- what the attempt's child process sends the worker over its pipe ------------------------


@dataclass(frozen=True)
class Moved:
    """Progress so far (at most every half second)."""

    progress: Progress


@dataclass(frozen=True)
class Done:
    """The output is complete; the final counts."""

    progress: Progress


@dataclass(frozen=True)
class Failed:
    """The attempt failed: ``permanent`` for bad input (no retry), else transient."""

    message: str
    permanent: bool
    #: The counts when it failed, when they moved since the last :class:`Moved` (rows read before a bad row).
    progress: Progress | None = None


Message = Moved | Done | Failed
