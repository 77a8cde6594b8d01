"""A completed task's result in a notebook: read straight from the store, with the caller's own credentials.

    from s3task import results

    result = results.open("01JD6Z…")                  # the store S3TASK_STORE names, or store="s3://bucket/prefix"
    frame = result.frame()                            # every row; every column text, the values exact
    for chunk in result.chunks(rows=100_000): ...     # the same, a DataFrame of at most that many rows at a time
    table = result.arrow()                            # the Parquet copy's columns, typed (numbers, dates, …)
    errors = results.open("01JD6Z…", rows="errors").frame()      # only the rows with errors
    combined = results.open("01JD6Z…", rows="combined").frame()  # the task with its corrections applied

Whoever holds the store's credentials reads it so (as ``s3task download`` does); everyone else goes through
the HTTP API with a token (docs/API.md), which checks access as the app does. The reader is the project's
own: the values are the task's exactly (the spreadsheet guard, a leading ``'``, taken off), block by block,
so :meth:`Result.chunks` holds one chunk at a time whatever the result's size. A copy the store does not
hold yet (the rows with errors, the Parquet copy, the combined result) is made there first, as a download
makes it. ``user``: who reads (``S3TASK_USER``, else the login name), for the task's access rules.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Literal

from .config import Settings
from .errors import InvalidInput
from .exports.source import exact_tables, peek_bom
from .exports.variants import Variant
from .store import open_store
from .tasks import Actor, TaskService

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from .record import TaskRecord

__all__ = ["Result", "Rows", "open"]

#: Which rows: the result, only its rows with errors, or the result with its corrections applied.
Rows = Literal["all", "errors", "combined"]
ROWS: tuple[Rows, ...] = ("all", "errors", "combined")
#: Rows a chunk holds unless told otherwise.
CHUNK_ROWS = 100_000


@dataclass(frozen=True)
class Result:
    """One completed task's rows (``rows``: which of them), read from the store each time they are asked for."""

    service: TaskService
    actor: Actor
    record: TaskRecord
    rows: Rows = "all"

    @property
    def task_id(self) -> str:
        return self.record.task_id

    def columns(self) -> list[str]:
        """The column names, as the result's header row has them."""
        with self._tables() as (names, _tables):
            return names

    def batches(self) -> Iterator[pa.Table]:
        """The rows as Arrow tables of text, in the reader's blocks (one held at a time)."""
        with self._tables() as (_names, tables):
            yield from tables

    def chunks(self, rows: int = CHUNK_ROWS) -> Iterator[pd.DataFrame]:
        """The rows as DataFrames of at most ``rows`` rows each (every column text), one held at a time."""
        import pyarrow as pa

        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
            raise InvalidInput(f"rows must be a whole number of at least 1, not {rows!r}")
        with self._tables() as (names, tables):
            held: list[pa.Table] = []
            count, given = 0, 0
            for table in tables:
                held.append(table)
                count += table.num_rows
                while count >= rows:
                    whole = pa.concat_tables(held)
                    yield whole.slice(0, rows).to_pandas()
                    held, count, given = [whole.slice(rows)], count - rows, given + 1
            if count or not given:  # the rest; a result without rows is one empty chunk, with its columns
                yield _frame(names, held)

    def frame(self) -> pd.DataFrame:
        """Every row in one DataFrame, every column text (the values exactly as the task wrote them)."""
        with self._tables() as (names, tables):
            return _frame(names, list(tables))

    def arrow(self) -> pa.Table:
        """The Parquet copy (made in the store if it is not yet): each column typed as its values allow
        (whole numbers, numbers, dates, times, true/false; text otherwise; docs/API.md)."""
        import pyarrow.parquet as pq

        if self.rows != "all":
            raise InvalidInput(f"the Parquet copy is of the whole result, not of rows={self.rows!r}")
        self.service.ensure_output(self.actor, self.task_id, "parquet")
        with tempfile.TemporaryFile() as spool:  # Parquet is read from its end: a seekable copy
            with self.service.open_output(self.actor, self.task_id, "parquet") as source:
                shutil.copyfileobj(source, spool, 1 << 20)
            spool.seek(0)
            return pq.read_table(spool)

    @contextlib.contextmanager
    def _tables(self) -> Iterator[tuple[list[str], Iterator[pa.Table]]]:
        with self._source() as raw:
            legacy, stream = peek_bom(raw)
            names, tables = exact_tables(stream, legacy)
            yield names, tables

    def _source(self) -> contextlib.AbstractContextManager[BinaryIO]:
        service, actor, task_id = self.service, self.actor, self.task_id
        if self.rows == "combined":
            service.ensure_combined(actor, task_id)
            return service.open_combined(actor, task_id)
        variant: Variant = "errors" if self.rows == "errors" else "csv"
        service.ensure_output(actor, task_id, variant)
        return service.open_output(actor, task_id, variant)


def _frame(names: list[str], tables: list[pa.Table]) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa

    if not tables:
        return pd.DataFrame({name: pd.Series([], dtype=object) for name in names})
    frame: pd.DataFrame = pa.concat_tables(tables).to_pandas()
    return frame


def open(  # as a file is opened: results.open(task_id)
    task_id: str, *, rows: Rows = "all", store: str | None = None, user: str | None = None
) -> Result:
    """The result of the completed task ``task_id`` in the store ``store`` (default: ``S3TASK_STORE``), as
    ``user`` may read it. Raises :class:`~s3task.errors.TaskNotFound` for a task not there,
    :class:`~s3task.errors.AccessDenied` for another user's (to a reader who is no operator), and
    :class:`~s3task.errors.InvalidTransition` for one that has not completed."""
    if rows not in ROWS:
        raise InvalidInput(f"rows must be one of {', '.join(ROWS)}, not {rows!r}")
    settings = Settings.load({"store": store})
    task_store, layout = open_store(settings.store, clock=settings.clock)
    who = user or settings.user or os.environ.get("USER") or os.environ.get("LOGNAME") or "local"
    actor = Actor(who, operator=who in settings.operators or settings.cli_operator)
    service = TaskService(task_store, layout, url_seconds=settings.url_seconds)
    record = service.get(actor, task_id)
    service.ensure_output(actor, task_id, "csv")  # completed, and theirs to read: said now, not at first read
    return Result(service, actor, record, rows)
