"""A task's rows with errors, corrected and sent back: a new task, linked to the original, that processes
only those rows with the original's type and settings.

The link is kept in both records: the new one's ``corrects`` (set in its create) and the original's
``corrections`` (a compare-and-set through :func:`s3task.lifecycle.note_correction`, re-decided on a
lost race, so two corrections sent at once are both listed; at most
:data:`s3task.record.MAX_CORRECTIONS`). Rows sent from a correction's page make a correction of its
original (the root), numbered as the root's file (the correction's errors workbook numbers them so),
so there are no chains and the root's combined result has every fix. Every check that can refuse (the
file, the bound, the new task's name, parameters, the create rate limit) is made first; then the
original lists the new task's id *before* the new task is created, with an id chosen here: a process
that dies in between leaves the original listing an id that is no task (:meth:`Corrections.of` shows
none for it), and never a correction its original does not know of. Then the new task is made as the
New task page makes one (create, its input stored, submit, from :class:`~s3task.tasks.inputs.Inputs`),
its input the corrected rows under the original's columns (:mod:`.corrected_file`), and next to it
which original row each stands for (:meth:`s3task.layout.Layout.corrected_rows_key`). Should any of
that fail, the new task is cancelled (the original lists a cancelled correction: what happened).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, BinaryIO

from .. import exports, handlers, lifecycle
from ..errors import InvalidInput, InvalidTransition, S3TaskError, TaskNotFound
from ..exports.errorbook import ROW_COLUMN, added_names
from ..ids import new_task_id
from ..record import TaskRecord
from ..states import Status
from ..store.base import ObjectMeta, PutMode
from . import access
from .access import Actor
from .corrected_file import read_corrected
from .input_check import header_of
from .transitions import MAX_NAME

if TYPE_CHECKING:
    from .inputs import Inputs
    from .outputs import Outputs

#: Rows with errors a task's page shows to be fixed in place (more: the errors workbook, fixed in Excel).
EDITABLE_ROWS = 1000
#: What a task of corrected rows is called: the original's name, then this.
#: A correction is named after its original, numbered: "March list (correction 2)".
NUMBERED = " (correction {n})"


class Corrections:
    def __init__(self, inputs: Inputs, outputs: Outputs) -> None:
        self.inputs, self.outputs = inputs, outputs
        self.transitions = inputs.transitions
        self.store, self.layout, self.records = (
            self.transitions.store,
            self.transitions.layout,
            self.transitions.records,
        )

    def submit(self, actor: Actor, task_id: str, data: bytes) -> TaskRecord:
        """Queue a new task of the corrected rows in ``data`` (the errors workbook fixed, as .xlsx or .csv).

        Sent from a correction's page, the new task corrects that correction's original (the root): its
        rows are numbered as the root's file (the correction's workbook numbers them so), and the root
        lists it, so the root's combined result has every fix. Everything that can refuse is checked
        before the root is written (:meth:`.transitions.Transitions.prepare`)."""
        page = self.transitions.get(actor, task_id, fresh=True)  # its corrections count: as stored
        access.require(actor, page, "send corrected rows for")
        if page.status != Status.COMPLETED or not page.error_count:
            raise InvalidTransition(
                f"only a completed task with rows with errors can be corrected: {lifecycle.describe(page)}"
            )
        root = self.root_of(actor, page)
        lifecycle.check_correctable(root)
        # The errors workbook says which rows had errors (made now if it was not, as its download would).
        self.outputs.ensure_output(actor, task_id, "errors-xlsx")
        names = header_of(self.store, page)
        added = added_names(self._error_column(page), names)
        corrected = read_corrected(data, names, added, self.error_rows(actor, task_id))
        new_id = new_task_id()
        suffix = NUMBERED.format(n=len(root.corrections) + 1)  # the root lists every correction made of it
        name = root.task_name[: MAX_NAME - len(suffix)] + suffix
        record = self.transitions.prepare(
            actor, name, root.task_type, self.transitions.params_of(root), {"delimiter": ",", "encoding": "utf-8"},
            corrects=root.task_id, task_id=new_id, recipe=root.recipe,
        )  # fmt: skip
        self.records.update(root.task_id, lambda r, now: lifecycle.note_correction(r, now, correction_id=new_id))
        made = self.transitions.store_new(actor, record)
        try:
            key = self.layout.corrected_rows_key(new_id)
            self.store.put(key, corrected.rows_csv(ROW_COLUMN), PutMode.CREATE, content_type="text/csv")
            self.inputs.upload_input(actor, new_id, corrected.input_csv(names))
            return self.transitions.submit(actor, new_id)
        except S3TaskError:
            self.inputs.abandon_upload(actor, made.task_id)
            raise

    def root_of(self, actor: Actor, record: TaskRecord) -> TaskRecord:
        """The task whose file ``record``'s rows are rows of: itself, or the original it corrects."""
        if not record.corrects:
            return record
        root = self.transitions.get(actor, record.corrects, fresh=True)  # its corrections: as stored
        access.require(actor, root, "send corrected rows for")
        return root

    @staticmethod
    def _error_column(record: TaskRecord) -> str:
        column = handlers.get(record.task_type).error_column
        if column is None:
            raise InvalidInput("this task type marks no row errors, so it has no rows to correct")
        return column

    def error_rows(self, actor: Actor, task_id: str) -> set[int]:
        """The original's rows with errors, by their row in its file (from the errors workbook)."""
        record = self.transitions.get(actor, task_id)
        access.require(actor, record, "read the rows with errors of")
        rows: set[int] = set()
        with self._book(exports.variant_keys(self.layout, record)["errors-xlsx"]) as book:
            for table, _end in book.tables():  # only the row column is kept: the file may be long
                rows.update(int(v) for v in table.column(1).to_pylist())
        return rows

    def rows_to_correct(
        self, actor: Actor, task_id: str, limit: int = EDITABLE_ROWS
    ) -> tuple[list[str], list[list[str]]]:
        """The errors workbook's header and rows (at most ``limit``; a task with more has none here), to be
        fixed in place and sent back as a CSV of the same columns (:meth:`submit`)."""
        record = self.transitions.get(actor, task_id)
        access.require(actor, record, "read the rows with errors of")
        if record.error_count > limit:
            raise InvalidInput(
                f"the task has {record.error_count:,} rows with errors; at most {limit:,} are fixed here"
            )
        self.outputs.ensure_output(actor, task_id, "errors-xlsx")
        return self._book_rows(exports.variant_keys(self.layout, record)["errors-xlsx"])

    def _book_rows(self, key: str) -> tuple[list[str], list[list[str]]]:
        with self._book(key) as book:
            return list(book.names), [list(row.values()) for table, _end in book.tables() for row in table.to_pylist()]

    @contextlib.contextmanager
    def _book(self, key: str) -> Iterator[Any]:
        """The errors workbook at ``key``, opened with the workbook reader (its header in row 1)."""
        from ..csvio import spooled
        from ..csvio.sheetreader import WorkbookReader

        size = self.store.head(key).size
        with self.store.open_read(key) as raw, spooled(raw, size) as copy, WorkbookReader(copy, None, 1) as book:
            yield book

    def of(self, actor: Actor, task_id: str) -> list[TaskRecord]:
        """The tasks made of ``task_id``'s corrected rows, oldest first; an id listed whose task was never
        made (its maker died between the two writes) is left out. The original's record is read as stored."""
        original = self.transitions.get(actor, task_id, fresh=True)  # another process may have listed one
        found = []
        for task_id in original.corrections:
            try:
                found.append(self.transitions.get(actor, task_id))
            except TaskNotFound:
                continue
        return found

    # --- the combined result -----------------------------------------------------------------------
    # A task's combined result, as a CSV or (``excel``) an Excel workbook made from that CSV. Asked of a
    # correction, it is its original's (the root's): every correction's rows are rows of that file.

    def _combined(self, actor: Actor, task_id: str, excel: bool = False) -> tuple[TaskRecord, list[TaskRecord], str]:
        """The original (if ``actor`` may read its result), its completed corrections, the combined copy's key."""
        original = self.transitions.get(actor, task_id)
        if original.corrects:
            original = self.transitions.get(actor, original.corrects)
        access.require(actor, original, "download the output of")
        done = [c for c in self.of(actor, original.task_id) if c.status == Status.COMPLETED]
        return original, done, exports.combined_key(self.layout, original, done, "xlsx" if excel else "csv")

    def _makeable(self, actor: Actor, task_id: str, excel: bool) -> tuple[TaskRecord, list[TaskRecord], str]:
        """As :meth:`_combined`; raises why the combined result cannot be made."""
        original, done, key = self._combined(actor, task_id, excel)
        if not done:
            raise exports.CannotExport("no correction of this task has completed yet")
        if excel:
            exports.check_excel(original)
        return original, done, key

    def combined_state(self, actor: Actor, task_id: str, excel: bool = False) -> exports.CopyState:
        """Whether the combined result of the corrections completed so far is made, being made, or not yet."""
        try:
            _original, _done, key = self._makeable(actor, task_id, excel)
        except exports.CannotExport as e:
            return exports.CopyState("refused", message=e.message)
        return self.outputs.exports.state(key)

    def prepare_combined(self, actor: Actor, task_id: str, excel: bool = False) -> exports.CopyState:
        """Start making the combined result in the background (once), like the output's other copies."""
        state = self.combined_state(actor, task_id, excel)
        if state.kind in ("absent", "failed"):
            original, done, key = self._combined(actor, task_id, excel)
            self.outputs.exports.start(key, self._maker(original, done, key, excel))
            return exports.CopyState("preparing")
        return state

    def combined_job(self, actor: Actor, task_id: str, excel: bool = False) -> Future[ObjectMeta] | None:
        """None if the combined result is made; else its making, started now if it was not (returns at once,
        as :meth:`s3task.tasks.outputs.Outputs.copy_job` does for the API). Raises why it cannot be made."""
        original, done, key = self._makeable(actor, task_id, excel)
        if self.outputs.exports.state(key).kind == "ready":
            return None
        return self.outputs.exports.start(key, self._maker(original, done, key, excel))

    def combined_filename(self, record: TaskRecord, excel: bool = False) -> str:
        """The combined result's file name, after ``record``: the original (a correction's ``corrects``)."""
        suffix = "-combined.xlsx" if excel else "-combined.csv"
        return self.outputs.output_filename(record).removesuffix(".csv") + suffix

    def ensure_combined(self, actor: Actor, task_id: str, excel: bool = False) -> None:
        """Make the combined result now if it is not made yet, waiting for it (the CLI); raises why it cannot be."""
        original, done, key = self._makeable(actor, task_id, excel)
        self.outputs.exports.wait(key, self._maker(original, done, key, excel))

    def _maker(self, original: TaskRecord, done: list[TaskRecord], key: str, excel: bool) -> Callable[[], ObjectMeta]:
        column = handlers.get(original.task_type).error_column
        make = exports.make_combined_xlsx if excel else exports.make_combined
        return lambda: make(self.store, self.layout, original, done, key, error_column=column)

    @contextlib.contextmanager
    def open_combined(self, actor: Actor, task_id: str, excel: bool = False) -> Iterator[BinaryIO]:
        """The combined result, once made, as a stream."""
        _original, _done, key = self._combined(actor, task_id, excel)
        with self.store.open_read(key) as f:
            yield f

    def combined_url(self, actor: Actor, task_id: str, excel: bool = False) -> str | None:
        """A short-lived URL of the combined result once it is made (:meth:`prepare_combined`)."""
        original, _done, key = self._combined(actor, task_id, excel)
        if self.outputs.exports.state(key).kind != "ready":
            raise exports.NotReady("the combined result is not made yet; ask for it to be prepared first")
        return self.outputs.urls.get(key, self.combined_filename(original, excel))
