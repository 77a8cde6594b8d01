"""A completed result's column charts, for whoever may read the result: a column's summary over every row
(:mod:`s3task.charts`), made once from the Parquet copy and kept in the store beside the output.

Built on the service's own public methods (it reads the output and its Parquet copy as any door does), so
it is a public part of the door, as ``steps`` and ``inboxes`` are: ``service.charts.chart_state(…)``.
Making a summary runs in the background (as a copy is made, :class:`s3task.exports.Exports`: each summary
once per process, a few at a time): the Parquet copy first if it is not made yet, then the column counted;
the summary is written create-only, so two replicas making it at once both end with the same object.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .. import charts, exports
from ..errors import AlreadyExists
from ..exports.source import exact_names
from ..store.base import ObjectMeta, PutMode
from .access import Actor

if TYPE_CHECKING:
    from .service import TaskService

JSON_TYPE = "application/json"
#: Summaries read back and kept in memory (each a few KB; they never change).
KEEP_READ = 128


@dataclass(frozen=True)
class ChartState:
    """Where a column's chart stands: ``ready`` (with its ``summary``), ``preparing`` (``step``: ``copy`` while
    the Parquet copy is made, ``count`` while the column is counted), ``failed`` (with why), ``absent``."""

    kind: Literal["ready", "preparing", "failed", "absent"]
    summary: charts.ColumnSummary | None = None
    step: Literal["copy", "count", ""] = ""
    message: str = ""


class Charts:
    def __init__(self, service: TaskService) -> None:
        self._service = service
        self._store = service.store
        self._runner = exports.Exports(self._store)
        self._read: OrderedDict[str, charts.ColumnSummary] = OrderedDict()
        self._lock = threading.Lock()

    def chart_columns(self, actor: Actor, task_id: str) -> list[str]:
        """The result's column names as the task produced them (the Parquet copy's names), from its header."""
        with self._service.open_output(actor, task_id) as raw:
            legacy, stream = exports.peek_bom(raw)
            return exact_names(stream, legacy)

    def _key(self, actor: Actor, task_id: str, column: str) -> str:
        self._service.export_state(actor, task_id, "parquet")  # refuses a reader who may not, or no output yet
        record = self._service.get(actor, task_id)
        return self._service.layout.chart_key(task_id, record.attempt_id, charts.digest(column))

    def chart_state(self, actor: Actor, task_id: str, column: str) -> ChartState:
        """Whether the chart of ``column`` is ready (with its summary), being made, failed, or not asked for."""
        key = self._key(actor, task_id, column)
        state = self._runner.state(key)
        if state.kind == "ready":
            return ChartState("ready", self._summary(key))
        if state.kind == "preparing":
            copy = self._service.export_state(actor, task_id, "parquet").kind
            return ChartState("preparing", step="count" if copy == "ready" else "copy")
        if state.kind in ("failed", "refused"):
            return ChartState("failed", message=state.message)
        return ChartState("absent")

    def prepare_chart(self, actor: Actor, task_id: str, column: str) -> ChartState:
        """Start making the chart of ``column`` in the background, unless it is made or being made."""
        state = self.chart_state(actor, task_id, column)
        if state.kind in ("absent", "failed"):
            key = self._key(actor, task_id, column)
            self._runner.start(key, self._maker(actor, task_id, column, key))
            return self.chart_state(actor, task_id, column)
        return state

    def column_summary(
        self, actor: Actor, task_id: str, column: str, *, timeout: float | None = None
    ) -> charts.ColumnSummary:
        """The summary of ``column``, made now if it is not yet (waiting for it; ``timeout``: at most this long,
        then :class:`~s3task.errors.OutputPreparing` while it goes on being made)."""
        key = self._key(actor, task_id, column)
        self._runner.wait(key, self._maker(actor, task_id, column, key), timeout)
        return self._summary(key)

    def _maker(self, actor: Actor, task_id: str, column: str, key: str) -> Callable[[], ObjectMeta]:
        def make() -> ObjectMeta:
            self._service.ensure_output(actor, task_id, "parquet")
            with self._service.open_output(actor, task_id, "parquet") as raw:
                summary = charts.summarise(raw, column)
            body = summary.to_json()
            try:
                etag = self._store.put(key, body, PutMode.CREATE, content_type=JSON_TYPE)
            except AlreadyExists:  # made at the same time elsewhere: the same content
                return self._store.head(key)
            return ObjectMeta(key, len(body), etag)

        return make

    def _summary(self, key: str) -> charts.ColumnSummary:
        with self._lock:
            found = self._read.get(key)
        if found is None:
            found = charts.ColumnSummary.from_json(self._store.get(key).body)
            with self._lock:
                self._read[key] = found
                while len(self._read) > KEEP_READ:
                    self._read.popitem(last=False)
        return found
