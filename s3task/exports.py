"""Copies of a completed output made on first request: the Excel workbook, the exact CSV, the errors-only CSV.

The stored output (``output-attempt-N.csv``) is the one thing a worker writes. It is a CSV
for spreadsheets: UTF-8 with a byte-order mark, and every value a spreadsheet would run as a
formula (or that starts with ``'``) has a leading ``'`` (:mod:`s3task.csvio.writing`). The
protection is reversible, so each copy here is derived from that one file, streamed, block by
block, in constant memory:

``xlsx``
    An Excel workbook: every cell a text cell holding exactly the value (no formula is ever
    written, so no ``'`` is needed). Refused above Excel's limits: 1,048,576 rows (the
    header included), 16,384 columns, and 32,767 characters in a cell (counted as Excel counts
    them, in UTF-16 units: an emoji is two).
``exact``
    The CSV with the values exactly as the task produced them (no ``'`` added), for pandas
    and scripts. Still UTF-8 with a BOM (``pandas.read_csv`` and ``encoding="utf-8-sig"``
    skip it).
``errors``
    Only the rows whose error cell is filled, the error column first, protected like the
    output (it is meant to be opened in a spreadsheet).

A copy is written next to the output (:meth:`s3task.layout.Layout.export_key`) with a
create-only put, through the store's streaming writer: the object appears only when it is
complete, and a writer that fails or dies leaves none (a local store's staged file is
discarded; an unfinished S3 multipart upload is invisible, and the bucket's lifecycle rule
aborts it). The content depends only on the output (the workbook's timestamps are fixed), so
two app replicas making the same copy at once is harmless: one put wins, the other finds it
made. Downloads then go through the same presigned URL / signed ``/transfer`` route as the
output: the bytes never pass through the app on S3.

:class:`Exports` runs the making in the background so that a page can say "Preparing…" and
poll: at most :data:`MAX_AT_ONCE` copies are made at once in a process (daemon threads; the
others wait their turn, "preparing" too), each copy once. A copy refused for a reason that
cannot change (:class:`CannotExport`: above an Excel limit) is remembered, not tried again.
"""

from __future__ import annotations

import csv
import io
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from .csvio.common import BOM, MAX_ROW_BYTES
from .errors import AlreadyExists, InvalidTransition, NotFound, OutputPreparing, S3TaskError
from .layout import CSV_TYPE, XLSX_TYPE, Layout
from .record import TaskRecord, parse_iso
from .store.base import ObjectMeta, ObjectStore, PutMode

if TYPE_CHECKING:  # imported where used: the CLI and workers read task states without them
    import pandas as pd
    import pyarrow as pa

log = logging.getLogger("s3task.exports")

Variant = Literal["csv", "exact", "errors", "xlsx"]
#: Every download of a completed task: the output itself, then the copies made from it.
VARIANTS: tuple[Variant, ...] = ("csv", "exact", "errors", "xlsx")
DERIVED: tuple[Variant, ...] = ("exact", "errors", "xlsx")
CONTENT_TYPES = {"csv": CSV_TYPE, "exact": CSV_TYPE, "errors": CSV_TYPE, "xlsx": XLSX_TYPE}
#: What each is called where a person chooses.
LABELS = {
    "csv": "CSV",
    "exact": "CSV with exact values",
    "errors": "only the rows with errors (CSV)",
    "xlsx": "Excel workbook (.xlsx)",
}

#: Rows in an Excel worksheet, the header row included.
EXCEL_MAX_ROWS = 1_048_576
#: Columns in an Excel worksheet.
EXCEL_MAX_COLUMNS = 16_384
#: Characters in an Excel cell, in UTF-16 code units (a character beyond U+FFFF, an emoji, is two).
EXCEL_MAX_CELL = 32_767
#: Copies made at once in a process (each reads the output and writes a copy; the rest wait).
MAX_AT_ONCE = 2
SHEET_NAME = "Result"
#: Rows turned into Python strings at a time for the workbook (a block holds tens of thousands).
_PY_ROWS = 2048


class CannotExport(InvalidTransition):
    """This copy of the output cannot be made (too big for Excel, no error column, no errors)."""


class NotReady(InvalidTransition):
    """The copy has not been made yet: ask for it to be prepared first."""


@dataclass(frozen=True)
class State:
    """Where a copy stands: ``ready`` (with its size), ``preparing``, ``failed`` (with why), ``absent``
    (not asked for yet), or ``refused`` (it cannot be made, with why)."""

    kind: Literal["ready", "preparing", "failed", "absent", "refused"]
    size: int | None = None
    message: str = ""


def source_key(record: TaskRecord) -> str:
    if not record.output_object_path:
        raise InvalidTransition("the task has no output")
    return record.output_object_path


def variant_keys(layout: Layout, record: TaskRecord) -> dict[Variant, str]:
    """Each variant's key for this completed task."""
    keys: dict[Variant, str] = {"csv": source_key(record)}
    for variant in DERIVED:
        keys[variant] = layout.export_key(record.task_id, record.attempt_id, variant)
    return keys


def check_possible(record: TaskRecord, variant: Variant, error_column: str | None) -> None:
    """Refuse, with the reason, a copy that cannot be made from this task's output."""
    if variant == "xlsx" and record.row_count is not None and record.row_count + 1 > EXCEL_MAX_ROWS:
        raise CannotExport(too_many_rows(record.row_count))
    if variant == "errors":
        if error_column is None:
            raise CannotExport("this task type marks no row errors, so there is no errors-only file")
        if not record.error_count:
            raise CannotExport("no row has an error, so there is no errors-only file")


def too_many_rows(rows: int) -> str:
    return (
        f"the result has {rows:,} rows and an Excel worksheet holds at most {EXCEL_MAX_ROWS - 1:,} "
        "(plus the header row); download the CSV instead"
    )


# --- making a copy -------------------------------------------------------------------------------


def make(
    store: ObjectStore,
    record: TaskRecord,
    variant: Variant,
    target: str,
    *,
    error_column: str | None,
) -> ObjectMeta:
    """Write the ``variant`` copy of the record's output to ``target`` (create-only), streamed.

    Returns the copy's metadata; a copy that another process made first counts as made.
    """
    if variant not in DERIVED:
        raise ValueError(f"{variant!r} is not a copy made from the output")
    check_possible(record, variant, error_column)
    source = source_key(record)
    meta = store.head(source)
    try:
        with (
            store.open_read(source, if_match=meta.etag) as raw,
            store.open_write(target, PutMode.CREATE, content_type=CONTENT_TYPES[variant]) as sink,
        ):
            legacy, stream = peek_bom(raw)
            if variant == "xlsx":
                write_xlsx(stream, sink, legacy=legacy, created=parse_iso(record.finished_at))
            else:
                write_csv(stream, sink, legacy=legacy, errors_only=variant == "errors", error_column=error_column)
    except AlreadyExists:
        pass  # made by someone else meanwhile: same bytes
    return store.head(target)


class _Prefixed:
    """A stream with some bytes already read from it put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = head, rest

    def read(self, n: int = -1, /) -> bytes:
        if self._head:
            if n < 0:
                data, self._head = self._head + self._rest.read(), b""
                return data
            data, self._head = self._head[:n], self._head[n:]
            return data
        return self._rest.read(n)


def peek_bom(raw: BinaryIO) -> tuple[bool, _Prefixed]:
    """Whether an output predates reversible protection (it has no BOM), and the stream to read it from."""
    head = b""
    while len(head) < len(BOM):
        more = raw.read(len(BOM) - len(head))
        if not more:
            break
        head += more
    return not head.startswith(BOM), _Prefixed(head, raw)


def exact_frame(frame: pd.DataFrame, *, legacy: bool) -> pd.DataFrame:
    """A frame read from an output (every column text) with the protection taken off (names too)."""
    import pandas as pd
    import pyarrow as pa

    from .csvio.common import TEXT
    from .csvio.writing import unprotect

    exact = {}
    for name in frame.columns:
        values = unprotect(pa.array(frame[name], TEXT, from_pandas=True), legacy=legacy).to_pylist()
        exact[_exact_name(str(name), legacy)] = pd.Series(values, index=frame.index, dtype=object)
    return pd.DataFrame(exact, index=frame.index)


def _exact_name(name: str, legacy: bool) -> str:
    import pyarrow as pa

    from .csvio.common import TEXT
    from .csvio.writing import unprotect

    return str(unprotect(pa.array([name], TEXT), legacy=legacy)[0].as_py())


def _exact_tables(stream: Any, legacy: bool) -> tuple[list[str], Iterator[pa.Table]]:
    """The output's header and its rows, block by block, with the protection taken off.

    The output is our own file, so the input's limit on columns does not apply to it (a task may
    add columns to an input at that limit): its header row is read here, and the reader reads the
    rows under it.
    """
    import pyarrow as pa

    from .csvio import CsvReader
    from .csvio.common import TEXT
    from .csvio.writing import unprotect

    header, rest = _split_header(stream)
    raw_names = next(csv.reader(io.StringIO(header.decode("utf-8"), newline="")), [])
    names = [str(v) for v in unprotect(pa.array(raw_names, TEXT), legacy=legacy).to_pylist()]
    reader = CsvReader(_Prefixed(b"_\n" + rest, stream))  # a stand-in header: the rows are read under ``names``
    reader.names = list(raw_names)

    def tables() -> Iterator[pa.Table]:
        fed = False
        for table, _end in reader.tables():
            fed = True
            yield pa.table([unprotect(col, legacy=legacy) for col in table.columns], names=names)
        if not fed:
            yield pa.table([pa.array([], TEXT) for _ in names], names=names)

    return names, tables()


def _split_header(stream: Any) -> tuple[bytes, bytes]:
    """The output's header row (without its BOM) and the bytes read after it."""
    from .csvio.boundary import scan_exact

    buf = b""
    while True:
        more = stream.read(1 << 16)
        buf += more
        if buf.startswith(BOM):
            buf = buf[len(BOM) :]
        end, _open = scan_exact(buf, b"\n", stop_at_first=True, delimiter=b",")
        if end >= 0 or not more:
            break
        if len(buf) > MAX_ROW_BYTES:
            raise S3TaskError(f"the output's header row is longer than {MAX_ROW_BYTES >> 20} MB")
    if end < 0:
        end = len(buf) - 1
    if not buf.strip(b"\r\n"):
        raise S3TaskError("the output is empty")
    return buf[: end + 1], buf[end + 1 :]


def write_csv(stream: Any, sink: Any, *, legacy: bool, errors_only: bool, error_column: str | None) -> int:
    """The exact CSV (or, ``errors_only``, the protected errors-only CSV); returns the data rows written."""
    import pyarrow.compute as pc

    from .csvio.writing import CsvWriter

    names, tables = _exact_tables(stream, legacy)
    if errors_only:
        if error_column is None or error_column not in names:
            raise CannotExport("the output has no error column")
        order = [error_column, *(n for n in names if n != error_column)]
    writer = CsvWriter(sink, error_column=error_column, protect=errors_only)
    rows = 0
    for table in tables:
        if errors_only:
            table = table.filter(pc.greater(pc.binary_length(table.column(error_column)), 0)).select(order)
        rows += writer.write(table).rows
    writer.close()
    return rows


def write_xlsx(stream: Any, sink: Any, *, legacy: bool, created: datetime | None = None) -> int:
    """The output as one worksheet of text cells, streamed (xlsxwriter's constant-memory mode).

    Rows are written as they are read; xlsxwriter keeps one row in memory and the sheet's XML in
    a temporary file, which it then zips into ``sink``. Returns the data rows written.
    """
    import xlsxwriter  # type: ignore[import-untyped]  # the app and the CLI need it; a worker never does

    names, tables = _exact_tables(stream, legacy)
    if len(names) > EXCEL_MAX_COLUMNS:
        raise CannotExport(too_many_columns(len(names)))
    book = xlsxwriter.Workbook(
        _WriteOnly(sink),
        {
            "constant_memory": True,
            "strings_to_numbers": False,
            "strings_to_formulas": False,
            "strings_to_urls": False,
        },
    )
    # Fixed timestamps: the same output always gives the same bytes.
    book.set_properties({"created": created or datetime(2000, 1, 1, tzinfo=UTC)})
    sheet = book.add_worksheet(SHEET_NAME)
    write = sheet.write_string
    _write_row(write, 0, names)
    row = 0
    for table in tables:
        if row + table.num_rows + 1 > EXCEL_MAX_ROWS:
            raise CannotExport(too_many_rows(row + table.num_rows))
        for batch in table.to_batches(max_chunksize=_PY_ROWS):  # Python strings for a few rows at a time
            for values in zip(*(col.to_pylist() for col in batch.columns), strict=True):
                row += 1
                _write_row(write, row, values)
    sheet.freeze_panes(1, 0)
    book.close()
    return row


def _write_row(write: Any, row: int, values: Any) -> None:
    for col, value in enumerate(values):
        if value:
            # Excel counts UTF-16 units (an emoji is two); only a value past half the limit can exceed it.
            if len(value) > EXCEL_MAX_CELL // 2 and _excel_length(value) > EXCEL_MAX_CELL:
                raise CannotExport(too_long(row, value))
            if write(row, col, value) != 0:  # xlsxwriter cuts what it finds too long and says so (-2)
                raise CannotExport(too_long(row, value))


def _excel_length(value: str) -> int:
    return len(value.encode("utf-16-le", "surrogatepass")) // 2


def too_long(row: int, value: str) -> str:
    return (
        f"row {row:,} of the result has a value of {_excel_length(value):,} characters (as Excel counts them) and "
        f"an Excel cell holds at most {EXCEL_MAX_CELL:,}; download the CSV instead"
    )


def too_many_columns(columns: int) -> str:
    return (
        f"the result has {columns:,} columns and an Excel worksheet holds at most {EXCEL_MAX_COLUMNS:,}; "
        "download the CSV instead"
    )


class _WriteOnly:
    """A store writer as the file object zipfile expects (it only writes; zipfile counts the bytes)."""

    def __init__(self, sink: Any) -> None:
        self._sink = sink

    def write(self, data: bytes) -> int:
        self._sink.write(data)
        return len(data)

    def flush(self) -> None:
        pass


# --- in the background, once per process ---------------------------------------------------------


class Exports:
    """Makes copies in background threads, each copy once, at most ``max_at_once`` at a time, and says
    where each stands."""

    def __init__(self, store: ObjectStore, max_at_once: int = MAX_AT_ONCE) -> None:
        self.store = store
        self.max_at_once = max(1, max_at_once)
        self._lock = threading.Lock()
        #: Copies being made or waiting their turn, the last failure of each, and refusals (kept).
        self._jobs: dict[str, Future[ObjectMeta]] = {}
        #: Copies known to exist (they never change): key -> size.
        self._ready: dict[str, int] = {}
        self._queue: deque[tuple[str, Callable[[], ObjectMeta], Future[ObjectMeta]]] = deque()
        self._threads = 0

    def state(self, key: str) -> State:
        """Where the copy at ``key`` stands; a HEAD only when this process has not seen it made."""
        with self._lock:
            if key in self._ready:
                return State("ready", self._ready[key])
            job = self._jobs.get(key)
        if job is not None:
            if not job.done():
                return State("preparing")  # being made, or waiting its turn
            error = job.exception()
            if isinstance(error, CannotExport):
                return State("refused", message=error.message)
            if error is not None:
                return State("failed", message=_reason(error))
        try:
            size = self.store.head(key).size
        except NotFound:
            return State("absent")
        with self._lock:
            self._ready[key] = size
        return State("ready", size)

    def start(self, key: str, make_copy: Callable[[], ObjectMeta]) -> Future[ObjectMeta]:
        """Queue ``make_copy()`` (which writes ``key``), unless it is queued, running, made here, or refused.

        A copy whose last try failed is tried again; one refused (:class:`CannotExport`) is not: its
        refusal is the answer.
        """
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and (not job.done() or not _retryable(job.exception())):
                return job
            if key in self._ready:  # made already: nothing to do
                made: Future[ObjectMeta] = Future()
                made.set_result(ObjectMeta(key, self._ready[key], ""))
                return made
            job = Future()
            job.set_running_or_notify_cancel()
            self._jobs[key] = job
            self._queue.append((key, make_copy, job))
            spawn = self._threads < self.max_at_once
            if spawn:
                self._threads += 1
        if spawn:
            threading.Thread(target=self._work, name="s3task-export", daemon=True).start()
        return job

    def _work(self) -> None:
        """Make queued copies one after another until none is left."""
        while True:
            with self._lock:
                if not self._queue:
                    self._threads -= 1
                    return
                key, make_copy, job = self._queue.popleft()
            self._run(key, make_copy, job)

    def _run(self, key: str, make_copy: Callable[[], ObjectMeta], job: Future[ObjectMeta]) -> None:
        try:
            meta = make_copy()
            size = meta.size
        except BaseException as e:  # the job carries it to whoever waits; this thread goes on
            if not isinstance(e, S3TaskError):
                log.exception("making %s failed", key)
            job.set_exception(e)
            return
        with self._lock:
            self._ready[key] = size
            self._jobs.pop(key, None)  # made: its size is all this process keeps
        job.set_result(meta)

    def wait(self, key: str, make_copy: Any, timeout: float | None = None) -> ObjectMeta:
        """The copy at ``key``, made now if it is not there yet (waiting for it); raises why it cannot be.

        ``timeout``: wait at most this long, then raise :class:`~s3task.errors.OutputPreparing` (the copy
        goes on being made in the background; ask again later).
        """
        if self.state(key).kind == "ready":
            return self.store.head(key)
        try:
            return self.start(key, make_copy).result(timeout)
        except FutureTimeout:
            raise OutputPreparing(
                f"the copy is still being made; ask again in a few seconds (it was asked for {timeout:g} s ago)"
            ) from None


def _retryable(error: BaseException | None) -> bool:
    """Whether a copy that failed with ``error`` may be made on another try (a refusal stays one)."""
    return error is not None and not isinstance(error, CannotExport)


def _reason(error: BaseException) -> str:
    if isinstance(error, S3TaskError):
        return error.message
    return f"{type(error).__name__}: {error}"
