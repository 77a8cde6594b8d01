"""The processing engine: one attempt of one task, input stream to output stream.

The worker runs :func:`run` in a child process per attempt. It reads the input
(a CSV, or one sheet of an Excel workbook) in blocks of whole rows
(:mod:`s3task.csvio`), hands each block to the task type's handler as a pandas
DataFrame of strings, and writes what the handler returns (then what its
``finish`` returns) as one output CSV.

Three threads form a pipeline, each stage at most one block ahead of the
next: a reader thread reads the source and parses the next block with Arrow,
the calling thread runs the handler, and a writer thread neutralises formulas,
encodes CSV and calls ``sink.write``. Arrow, numpy and socket/file I/O release
the GIL, so the stages overlap on a second core. Memory stays flat: a handful
of blocks are alive at any time, whatever the file size.

Arrow keeps its default allocator (mimalloc in the pyarrow wheels). With
Arrow's parse threads on, memory freed on one thread was held back by the
others and jemalloc did better; with one parse thread per block (see
:class:`~s3task.csvio.BlockParser`) mimalloc peaks at the same resident size
for a 100 MB and a 2 GB input, where jemalloc kept climbing for its first
second (the purge delay) and so peaked 15-25% higher on long inputs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

from . import handlers
from .csvio import DEFAULT_BLOCK_SIZE, CsvReader, CsvWriter, InputFormat, Readable
from .progress import Progress

if TYPE_CHECKING:
    from .csvio.sheetreader import WorkbookReader

__all__ = ["DEFAULT_BLOCK_SIZE", "Progress", "run"]  # Progress: from s3task.progress

T = TypeVar("T")


def run(
    task_type: str,
    params: dict[str, Any],
    source: Readable,
    sink: Any,
    on_progress: Callable[[Progress], None],
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    input_format: InputFormat | None = None,
    context: Any = None,
    rows: Any = None,
) -> Progress:
    """Process ``source`` (anything with ``read(n)``) into ``sink`` (anything with ``write(bytes)``).

    Raises :class:`~s3task.errors.InvalidInput` for input that cannot be used
    (the message names the line); any other exception is a transient failure.
    ``on_progress`` is called on the calling thread with a copy of the counts
    after the header and after every block; the last call has the final
    counts, which are also returned. ``source.read`` is called from a reader
    thread and ``sink.write`` from a writer thread (one thread each, in
    order, never concurrently); both are done when ``run`` returns or raises.
    ``input_format`` is how the input is written (default: comma, UTF-8); the
    output is UTF-8 with commas whatever it is, and progress counts input bytes.
    A workbook's ``source`` must be a seekable file (its zip directory is at its
    end: see :func:`s3task.csvio.spool.spooled`); it is read on the calling thread
    until its header is found, then block by block on the reader thread.
    ``context``: what a task type that reads more than its input needs (the step
    list's, :class:`s3task.steps.wholefile.Context`); given to it as ``handler.context``.
    ``rows``: a binary file that, for a task type that ``numbers_rows``, receives which
    input row each output row came from (an Arrow IPC stream of int64; see
    :data:`s3task.layout.ROWS`); without it they are dropped.
    """
    handler = handlers.get(task_type)(params)
    if context is not None and hasattr(handler, "context"):
        handler.context = context
    if handler.reads_itself:  # a comparison: its input names what it reads (s3task.handlers.compare)
        return cast(Progress, handler.run_file(source, sink, on_progress))
    reader = _reader(source, block_size, input_format)
    try:
        return _process(handler, reader, sink, on_progress, rows)
    finally:
        if not isinstance(reader, CsvReader):
            reader.close()  # the workbook's zip (never the caller's file): at once, when a handler fails too


def _reader(source: Readable, block_size: int, input_format: InputFormat | None) -> CsvReader | WorkbookReader:
    if input_format is not None and input_format.is_workbook:
        from .csvio.sheetreader import WorkbookReader

        return WorkbookReader(cast(IO[bytes], source), input_format.sheet, input_format.header_row)
    return CsvReader(source, block_size, input_format)


def _process(
    handler: Any, reader: CsvReader | WorkbookReader, sink: Any, on_progress: Callable[[Progress], None], rows: Any
) -> Progress:
    writer = CsvWriter(sink, error_column=handler.error_column)
    counts = Progress(bytes_processed=reader.bytes_consumed)
    on_progress(replace(counts))

    def write(item: Any) -> None:
        if item is _CLOSE:
            writer.close()
        else:
            writer.write_table(item)

    with _Background(write, name="s3task-write") as output:

        def emit(frame: Any) -> None:
            table, written = writer.prepare(frame)
            if table is not None:
                output.submit(table)
            counts.add(written.rows, written.errors)

        if handler.takes_arrow:
            numbers = _RowNumbers(rows) if handler.numbers_rows else None
            for table in handler.stream(_counted(reader, counts, writer, on_progress)):
                emit(numbers.split(table) if numbers else table)
            if numbers:
                numbers.close()
            counts.steps = handler.step_counts()
        else:
            for table in _counted(reader, counts, writer, on_progress):
                emit(handler.process(table.to_pandas(use_threads=False)))  # zero-copy text: threads add nothing
            emit(handler.finish())
        output.submit(_CLOSE)
    counts.protected_count = writer.protected  # the writer thread has finished: exact
    on_progress(replace(counts))
    return counts


def _counted(
    reader: CsvReader | WorkbookReader, counts: Progress, writer: CsvWriter, on_progress: Any
) -> Iterator[Any]:
    """The input's tables, the counts moved on as each is done with (``protected``: the cells the writer
    thread gave a leading '). At least one table: a header-only file gives its empty table, so the task
    type still sees the columns and the output has a header."""
    fed = False
    for table, end in _prefetch(reader.tables(), name="s3task-read"):
        fed = True
        yield table
        counts.processed_count += table.num_rows
        counts.bytes_processed = end
        counts.protected_count = writer.protected
        on_progress(replace(counts))
    if not fed:
        yield reader.empty_table()


class _RowNumbers:
    """Takes the input row numbers off a numbering task type's tables (their last column) into ``rows``."""

    def __init__(self, rows: Any) -> None:
        self._rows, self._writer = rows, None

    def split(self, table: Any) -> Any:
        import pyarrow as pa

        if self._rows is not None:
            self._stream().write_table(pa.table({"row": table.column(table.num_columns - 1)}))
        return table.drop_columns([table.column_names[-1]])

    def _stream(self) -> Any:
        import pyarrow as pa

        if self._writer is None:
            options = pa.ipc.IpcWriteOptions(compression="zstd")  # rising numbers: a few bits a row
            self._writer = pa.ipc.new_stream(self._rows, pa.schema([("row", pa.int64())]), options=options)
        return self._writer

    def close(self) -> None:
        if self._rows is not None:
            self._stream().close()  # a stream even for no rows at all


_DONE = object()
_CLOSE = object()


def _prefetch(items: Iterator[T], name: str) -> Iterator[T]:
    """Iterate ``items`` in a background thread, one item ahead of the consumer."""
    channel = _Handoff()

    def produce() -> None:
        try:
            for item in items:
                if not channel.put((item, None)):
                    return  # the consumer has gone: read nothing more
            channel.put((_DONE, None))
        except BaseException as e:
            channel.put((None, e))

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            _, (item, error) = channel.get()
            if error is not None:
                raise error
            if item is _DONE:
                return
            yield item
    finally:
        channel.close()
        thread.join()


class _Background:
    """Calls ``consume(item)`` for each submitted item on one background thread, in order.

    At most one item waits while another is consumed. An exception in
    ``consume`` is raised in the submitting thread at the next ``submit`` or
    on leaving the ``with`` block; nothing more is consumed after it, nor
    after the block is left with an exception.
    """

    def __init__(self, consume: Callable[[Any], None], name: str) -> None:
        self._consume = consume
        self._channel = _Handoff()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def __enter__(self) -> _Background:
        self._thread.start()
        return self

    def submit(self, item: Any) -> None:
        self._raise_error()
        if not self._channel.put(item):
            self._raise_error()

    def _loop(self) -> None:
        while True:
            ok, item = self._channel.get()
            if not ok:
                return
            try:
                self._consume(item)
            except BaseException as e:
                self._error = e
                self._channel.close()
                return
            if item is _CLOSE:
                return

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if kind is not None:
            self._channel.close()  # failing anyway: drop what is queued
        self._thread.join()
        if kind is None:
            self._raise_error()


class _Handoff:
    """A one-item channel between two threads; closing it wakes and releases both sides."""

    def __init__(self) -> None:
        self._ready = threading.Condition()
        self._items: list[Any] = []
        self._closed = False

    def put(self, item: Any) -> bool:
        """Wait for the slot to be free and fill it; False if the channel was closed."""
        with self._ready:
            while self._items and not self._closed:
                self._ready.wait()
            if self._closed:
                return False
            self._items.append(item)
            self._ready.notify_all()
            return True

    def get(self) -> tuple[bool, Any]:
        """Wait for an item and take it: (True, item), or (False, None) once closed."""
        with self._ready:
            while not self._items and not self._closed:
                self._ready.wait()
            if self._closed:
                return False, None
            item = self._items.pop()
            self._ready.notify_all()
            return True, item

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._items.clear()
            self._ready.notify_all()
