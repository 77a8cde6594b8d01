"""What a task's counts say, in one place: rows read, written, with errors and left out.

The record keeps the raw counts: ``processed_count`` (input rows read),
``row_count`` (output rows written; so far, while it runs), ``error_count``
(output rows with an error). What they mean depends on the task type
(:class:`s3task.handlers.TaskType`): whether its output is rows of the input or
a summary of it (``output_rows``), whether it may leave rows out
(``leaves_out_rows``) and whether it marks errors (``error_column``). Every
view — the app's task page and list, the CLI's ``show`` and ``list``, the API's
task JSON — takes its words and numbers from :func:`counts_of`.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import handlers
from .errors import S3TaskError
from .record import TaskRecord

#: The counts' names (as in the API's JSON) and their words.
LABELS = {
    "rows_read": "Rows read",
    "rows_written": "Rows written",
    "rows_with_errors": "Rows with errors",
    "rows_left_out": "Rows left out",
}
#: The written count's words when the output is a summary of the input, not its rows.
SUMMARY_LABEL = "Summary rows"
#: What each count means, for help texts.
HELP = {
    "rows_read": "Data rows read from the uploaded file (the header is not counted).",
    "rows_written": "Rows in the result file (the header is not counted).",
    "rows_with_errors": "Rows of the result whose error column says what is wrong with them.",
    "rows_left_out": "Rows read but not in the result, left out on purpose (e.g. empty or repeated rows).",
}
SUMMARY_HELP = "Rows of the summary in the result file (e.g. one per column of the uploaded file)."


@dataclass(frozen=True)
class Counts:
    """A task's counts. ``None``: the count does not apply to this task type (or is not known yet)."""

    rows_read: int
    rows_written: int | None
    rows_with_errors: int | None
    rows_left_out: int | None
    #: The output is a summary of the input (so rows written are summary rows, not input rows).
    summary: bool

    def as_dict(self) -> dict[str, int | None]:
        return {name: getattr(self, name) for name in LABELS}

    def shown(self) -> list[tuple[str, str, int | None]]:
        """(name, words, value) of each count that applies, in order; a value of None is not known yet."""
        out: list[tuple[str, str, int | None]] = [("rows_read", LABELS["rows_read"], self.rows_read)]
        out.append(("rows_written", SUMMARY_LABEL if self.summary else LABELS["rows_written"], self.rows_written))
        if not self.summary and self.rows_with_errors is not None:
            out.append(("rows_with_errors", LABELS["rows_with_errors"], self.rows_with_errors))
        if not self.summary and self.rows_left_out is not None:
            out.append(("rows_left_out", LABELS["rows_left_out"], self.rows_left_out))
        return out

    def lines(self) -> list[tuple[str, str]]:
        """(words, number as text) of each count that applies; "–" for one not known yet."""
        return [(label, "–" if value is None else f"{value:,}") for _, label, value in self.shown()]


def _traits(task_type: str) -> tuple[bool, bool | None, bool | None]:
    """(summary, marks errors, leaves rows out) of a task type; None where a type unknown here cannot say."""
    try:
        t = handlers.get(task_type)
    except S3TaskError:  # a type from a module this process has not loaded
        return False, None, None
    return t.output_rows == "summary", t.error_column is not None, t.leaves_out_rows


def counts_of(record: TaskRecord) -> Counts:
    """The counts of a task, as every view shows them.

    Rows written is known once the task has started (the worker saves it with
    the other counts) and final when it is completed; rows left out is rows
    read minus rows written, for a type that may leave rows out. A type this
    process does not know shows errors when there are some and rows left out
    when the finished output is shorter than the input.
    """
    summary, marks_errors, leaves_out = _traits(record.task_type)
    read = record.processed_count
    written = record.row_count if record.attempt_id > 0 else None
    errors: int | None = record.error_count
    if summary or marks_errors is False or (marks_errors is None and not record.error_count):
        errors = None
    left_out: int | None = None
    finished_short = record.status == "completed" and written is not None and written < read
    if not summary and written is not None and (leaves_out or (leaves_out is None and finished_short)):
        left_out = max(0, read - written)
    return Counts(read, written, errors, left_out, summary)


def phrase(label: str, value: str) -> str:
    """A count in a sentence: "2 rows read", "1 row read", "1 summary row" (``label``, ``value``: a :meth:`Counts.lines`
    pair)."""
    words = label.lower()
    return f"{value} {words.replace('rows', 'row', 1) if value == '1' else words}"


def count_help(record: TaskRecord, name: str) -> str:
    """What the count ``name`` (a key of :data:`LABELS`) means for this task."""
    return SUMMARY_HELP if name == "rows_written" and counts_of(record).summary else HELP[name]
