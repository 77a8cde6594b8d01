"""The processing engine: one attempt of one task, input stream to output stream.

The worker runs :func:`run` in a child process per attempt. It reads the input
CSV in blocks of whole rows (:mod:`s3task.csvio`), hands each block to the
task type's handler as a pandas DataFrame of strings, and writes what the
handler returns (then what its ``finish`` returns) as one output CSV. Memory
stays flat: about three blocks are alive at a time (one being read and
parsed, one waiting, one being processed and written).

Reading and parsing the next block run in a background thread while the
current one is processed; Arrow releases the GIL while it parses, so this
uses the second core.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import pyarrow as pa

from . import handlers
from .csvio import DEFAULT_BLOCK_SIZE, Block, CsvReader, CsvWriter, Readable, Written

__all__ = ["DEFAULT_BLOCK_SIZE", "Counts", "run"]

T = TypeVar("T")


@dataclass
class Counts:
    """Progress of one attempt."""

    #: Input data rows consumed (blank lines are not rows).
    processed_count: int = 0
    #: Output rows whose error cell is empty.
    success_count: int = 0
    #: Output rows with an error.
    error_count: int = 0
    #: Input bytes consumed by the rows processed so far (exact; the input size at the end).
    bytes_processed: int = 0
    #: Output data rows written.
    row_count: int = 0

    def add(self, written: Written) -> None:
        self.row_count += written.rows
        self.error_count += written.errors
        self.success_count += written.rows - written.errors


def run(
    task_type: str,
    params: dict[str, Any],
    source: Readable,
    sink: Any,
    on_progress: Callable[[Counts], None],
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> Counts:
    """Process ``source`` (anything with ``read(n)``) into ``sink`` (anything with ``write(bytes)``).

    Raises :class:`~s3task.errors.InvalidInput` for input that cannot be used
    (the message names the line); any other exception is a transient failure.
    ``on_progress`` gets a copy of the counts after the header and after every
    block; the last call has the final counts, which are also returned.
    """
    handler = handlers.get(task_type)(params)
    reader = CsvReader(source, block_size)
    writer = CsvWriter(sink, error_column=handler.error_column)
    counts = Counts(bytes_processed=reader.bytes_consumed)
    on_progress(replace(counts))
    fed = False
    for table, block in _prefetch(reader.tables()):
        _process(handler, writer, counts, table, block)
        on_progress(replace(counts))
        fed = True
    if not fed:  # header only: the handler still sees the columns, so the output has a header
        _process(handler, writer, counts, reader.empty_table(), None)
    counts.add(writer.write(handler.finish()))
    writer.close()
    on_progress(replace(counts))
    return counts


def _process(
    handler: handlers.TaskType, writer: CsvWriter, counts: Counts, table: pa.Table, block: Block | None
) -> None:
    counts.add(writer.write(handler.process(table.to_pandas())))
    counts.processed_count += table.num_rows
    if block is not None:
        counts.bytes_processed = block.end


_DONE = object()


def _prefetch(items: Iterator[T]) -> Iterator[T]:
    """Iterate ``items`` in a background thread, one item ahead of the consumer."""
    slot: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if not _offer(slot, (item, None), stop):
                    return
            _offer(slot, (_DONE, None), stop)
        except BaseException as e:
            _offer(slot, (None, e), stop)

    thread = threading.Thread(target=produce, name="s3task-read", daemon=True)
    thread.start()
    try:
        while True:
            item, error = slot.get()
            if error is not None:
                raise error
            if item is _DONE:
                return
            yield item
    finally:
        stop.set()
        thread.join()


def _offer(slot: queue.Queue[Any], entry: tuple[Any, BaseException | None], stop: threading.Event) -> bool:
    """Put ``entry`` in the slot unless the consumer has gone away."""
    while not stop.is_set():
        try:
            slot.put(entry, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False
