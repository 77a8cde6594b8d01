"""A completed task's output, for whoever may read it: download URLs, the file as a stream, the copies
made from it on request (Excel, exact values, rows with errors: :mod:`s3task.exports`), a preview."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, BinaryIO

from .. import exports, handlers, lifecycle, query
from ..errors import InvalidInput, InvalidTransition, S3TaskError
from ..record import TaskRecord
from ..states import Status
from ..store.base import ObjectMeta
from . import access
from .access import Actor
from .transitions import Transitions
from .urls import Urls

if TYPE_CHECKING:  # read_output's frame; pandas is imported when rows are read
    import pandas as pd


class Outputs:
    def __init__(self, transitions: Transitions, urls: Urls) -> None:
        self.transitions, self.urls = transitions, urls
        self.store, self.layout = transitions.store, transitions.layout
        #: The copies of outputs (Excel, exact CSV, errors only) this process makes (s3task.exports).
        self.exports = exports.Exports(self.store)

    def _completed(self, actor: Actor, task_id: str) -> tuple[TaskRecord, str]:
        """The completed task and its output's key, if ``actor`` may read it."""
        record = self.transitions.get(actor, task_id)
        access.require(actor, record, "download the output of")
        if record.status != Status.COMPLETED or not record.output_object_path:
            raise InvalidTransition(f"there is no output yet: {lifecycle.describe(record)}")
        return record, record.output_object_path

    @staticmethod
    def output_filename(record: TaskRecord, variant: exports.Variant = "csv") -> str:
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", record.task_name).strip("-.")[:60] or "output"
        suffix = {
            "csv": ".csv",
            "exact": "-exact.csv",
            "errors": "-errors.csv",
            "errors-xlsx": "-errors.xlsx",
            "xlsx": ".xlsx",
            "parquet": ".parquet",
        }[variant]
        return f"{stem}-{record.task_id[-6:].lower()}{suffix}"

    def output_url(self, actor: Actor, task_id: str, variant: exports.Variant = "csv") -> str | None:
        """A short-lived download URL, or None if the store has none (stream with open_output).

        A copy (``variant`` other than ``csv``, see :mod:`s3task.exports`) must have been made
        first (:meth:`prepare_output`, :meth:`ensure_output`); else :class:`~s3task.exports.NotReady`.
        """
        record, key = self._variant(actor, task_id, variant)
        if variant != "csv" and self.export_state(actor, task_id, variant).kind != "ready":
            raise exports.NotReady(f"the {exports.LABELS[variant]} is not made yet; ask for it to be prepared first")
        return self.urls.get(key, self.output_filename(record, variant))

    @contextlib.contextmanager
    def open_output(self, actor: Actor, task_id: str, variant: exports.Variant = "csv") -> Iterator[BinaryIO]:
        """The output (or a copy of it that has been made) as a stream."""
        _, key = self._variant(actor, task_id, variant)
        with self.store.open_read(key) as f:
            yield f

    def _variant(self, actor: Actor, task_id: str, variant: exports.Variant) -> tuple[TaskRecord, str]:
        if variant not in exports.VARIANTS:
            raise InvalidInput(f"no download called {variant!r}: use one of {', '.join(exports.VARIANTS)}")
        record, _ = self._completed(actor, task_id)
        return record, exports.variant_keys(self.layout, record)[variant]

    # --- copies ------------------------------------------------------------------------------------

    @staticmethod
    def _error_column(record: TaskRecord) -> str | None:
        try:
            return handlers.get(record.task_type).error_column
        except S3TaskError:  # a task type whose module is not loaded here: the usual column, if the file has one
            return handlers.ERROR_COLUMN

    def export_state(self, actor: Actor, task_id: str, variant: exports.Variant) -> exports.CopyState:
        """Whether a copy of the output is made, being made, failed, not asked for, or cannot be made."""
        record, key = self._variant(actor, task_id, variant)
        if variant == "csv":
            return exports.CopyState("ready")
        try:
            exports.check_possible(record, variant, self._error_column(record))
        except exports.CannotExport as e:
            return exports.CopyState("refused", message=e.message)
        return self.exports.state(key)

    def prepare_output(self, actor: Actor, task_id: str, variant: exports.Variant) -> exports.CopyState:
        """Start making a copy of the output in the background, unless it is made or being made."""
        state = self.export_state(actor, task_id, variant)
        if state.kind in ("absent", "failed"):
            record, key = self._variant(actor, task_id, variant)
            self.exports.start(key, self._maker(record, variant, key))
            return exports.CopyState("preparing")
        return state

    def ensure_output(
        self, actor: Actor, task_id: str, variant: exports.Variant, *, timeout: float | None = None
    ) -> None:
        """Make a copy of the output now if it is not made yet, waiting for it; raises why it cannot be.

        ``timeout``: wait at most this long, then raise :class:`OutputPreparing` while it goes on being made.
        """
        record, key = self._variant(actor, task_id, variant)
        if variant == "csv":
            return
        exports.check_possible(record, variant, self._error_column(record))
        self.exports.wait(key, self._maker(record, variant, key), timeout)

    def copy_job(self, actor: Actor, task_id: str, variant: exports.Variant) -> Future[ObjectMeta] | None:
        """None if the output (or its copy) is there to download; else the copy being made, started now if
        it was not. Returns at once (a HEAD at most): whoever waits for the copy waits on the future, which
        lets an async server wait without holding a thread (s3task.web.api). Raises why it cannot be made."""
        record, key = self._variant(actor, task_id, variant)
        if variant == "csv":
            return None
        exports.check_possible(record, variant, self._error_column(record))
        if self.exports.state(key).kind == "ready":
            return None
        return self.exports.start(key, self._maker(record, variant, key))

    def _maker(self, record: TaskRecord, variant: exports.Variant, key: str) -> Callable[[], ObjectMeta]:
        error_column = self._error_column(record)
        # A task of corrected rows numbers its rows with errors as the original's file does (the staff's file).
        rows_key = self.layout.corrected_rows_key(record.task_id) if record.corrects else None
        return lambda: exports.make(self.store, record, variant, key, error_column=error_column, rows_key=rows_key)

    # --- a preview ---------------------------------------------------------------------------------

    def read_output(
        self, actor: Actor, task_id: str, rows: int = 100, *, errors_only: bool = False, exact: bool = False
    ) -> pd.DataFrame:
        """The first ``rows`` output rows (only rows with an error, if asked), read as text.

        ``exact``: the values as the task produced them, without the ``'`` the file has before
        values a spreadsheet would run (see :mod:`s3task.exports`).
        """
        with self.open_output(actor, task_id) as raw:
            legacy, f = exports.peek_bom(raw)
            frame = _read_rows(f, rows, errors_only)
        return exports.exact_frame(frame, legacy=legacy) if exact else frame

    # --- the whole output, searched ----------------------------------------------------------------

    def output_columns(self, actor: Actor, task_id: str) -> list[str]:
        """The whole output's column names as written (what a search, filter or sort names)."""
        with self.open_output(actor, task_id) as raw:
            return query.columns_of(raw)

    def query_output(self, actor: Actor, task_id: str, question: query.Query) -> query.Answer:
        """One page of the rows of the whole output that match ``question`` (:mod:`s3task.query`)."""
        with self.open_output(actor, task_id) as raw:
            return query.answer(raw, question)

    def _view(self, actor: Actor, task_id: str, question: query.Query, suffix: str) -> tuple[TaskRecord, str]:
        if suffix not in query.VIEW_KINDS:
            raise InvalidInput(f"no view download as {suffix!r}: use one of {', '.join(query.VIEW_KINDS)}")
        query.check_lengths(question)  # refused here, not after a file was started
        record, _ = self._completed(actor, task_id)
        return record, self.layout.view_key(task_id, record.attempt_id, query.digest(question), suffix)

    def view_state(self, actor: Actor, task_id: str, question: query.Query, suffix: str) -> exports.CopyState:
        """Whether the file of the rows matching ``question`` (CSV or xlsx) is made, being made, or failed."""
        _, key = self._view(actor, task_id, question, suffix)
        return self.exports.state(key)

    def prepare_view(self, actor: Actor, task_id: str, question: query.Query, suffix: str) -> exports.CopyState:
        """Start making the file of every row matching ``question``, in its order, in the background (once):
        next to the output, like the other copies, through the store's streaming writer."""
        record, key = self._view(actor, task_id, question, suffix)
        state = self.exports.state(key)
        if state.kind in ("absent", "failed"):
            self.exports.start(key, lambda: query.make_view(self.store, record, question, suffix, key))
            return exports.CopyState("preparing")
        return state

    def view_url(self, actor: Actor, task_id: str, question: query.Query, suffix: str) -> str | None:
        """A short-lived URL of the view's file once it is made (:meth:`prepare_view`)."""
        record, key = self._view(actor, task_id, question, suffix)
        if self.exports.state(key).kind != "ready":
            raise exports.NotReady("this view's file is not made yet; ask for it to be prepared first")
        name = self.output_filename(record).rsplit(".", 1)[0]
        return self.urls.get(key, f"{name}-view.{suffix}")


def _read_rows(f: Any, rows: int, errors_only: bool) -> pd.DataFrame:
    import pandas as pd

    if not errors_only:
        return pd.read_csv(f, nrows=rows, dtype=str, keep_default_na=False)
    found: list[pd.DataFrame] = []
    total = 0
    for chunk in pd.read_csv(f, chunksize=10_000, dtype=str, keep_default_na=False):
        if handlers.ERROR_COLUMN not in chunk.columns:
            return chunk.iloc[0:0]
        bad = chunk[chunk[handlers.ERROR_COLUMN] != ""]
        found.append(bad)
        total += len(bad)
        if total >= rows:
            break
    return pd.concat(found).head(rows) if found else pd.DataFrame()
