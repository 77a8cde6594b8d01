"""The output's rows as the Parquet copy reads and writes them: parsed by Arrow's streaming reader a block ahead on
a thread of its own, and written a row group behind on another, so that both of a small box's cores work.

The output is our own RFC 4180 file, so its rows need none of :class:`~s3task.csvio.CsvReader`'s care for an
input (its row ends found by a scan of every quote, each block parsed on its own): Arrow's streaming reader cuts
and parses it, about half the CPU. Arrow refuses a row longer than about two of its blocks
(:class:`NotForArrow`): the copy is then read as :func:`~.source.exact_tables` reads any output.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from .source import _names, _Prefixed, _split_header

if TYPE_CHECKING:
    import pyarrow as pa

T = TypeVar("T")
#: Bytes of the output Arrow parses at a time. Its reader reads up to 32 blocks ahead: with 1 MB blocks the copy
#: of a 1 GB output peaks at about 250-275 MB, of a 189 MB one the same (218 MB for the copy read twice by the
#: input reader); with 4 MB blocks at about 350 MB, for no less CPU.
BLOCK_SIZE = 1 << 20
#: Arrow's blocks are gathered into row groups of about this many bytes of the output (as the reader before cut
#: its blocks: a text column's chart counts a row group at a time).
ROW_GROUP_BYTES = 4 << 20
#: Row groups handed to the writer's thread and not yet written, at most.
WRITES_BEHIND = 2


class NotForArrow(Exception):
    """Arrow's streaming reader refused the output (a row longer than its blocks): read it as any output."""


class _FullReads:
    """A stream whose ``read(n)`` gives ``n`` bytes until its end (a network body may give fewer): Arrow's blocks
    are then the same on every read of the output, and so is whether it refuses one."""

    closed = False

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def read(self, n: int = -1, /) -> bytes:
        if n < 0:
            return bytes(self._stream.read())
        parts, size = [], 0
        while size < n:
            data = self._stream.read(n - size)
            if not data:
                break
            parts.append(bytes(data))
            size += len(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def close(self) -> None:  # the stream belongs to the caller
        pass


def arrow_tables(stream: Any, legacy: bool) -> tuple[list[str], Iterator[pa.Table]]:
    """:func:`~.source.exact_tables` by Arrow's streaming reader: the header's names and the rows, a row group at
    a time, with the protection taken off (raises :class:`NotForArrow` where Arrow refuses the output)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from ..csvio.common import TEXT

    header, rest = _split_header(stream)
    raw_names, names = _names(header, legacy)
    placeholders = [f"c{i}" for i in range(len(raw_names))]  # the header's own names might repeat
    # A blank first line (Arrow skips it), so that a BOM opening the first value stays: Arrow drops one there.
    body = pa.PythonFile(_FullReads(_Prefixed(b"\n" + rest, stream)), mode="r")
    options = pacsv.ConvertOptions(
        column_types=dict.fromkeys(placeholders, TEXT), strings_can_be_null=False, quoted_strings_can_be_null=False
    )
    try:
        reader = pacsv.open_csv(
            body,
            read_options=pacsv.ReadOptions(column_names=placeholders, block_size=BLOCK_SIZE, use_threads=False),
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=options,
        )
    except pa.ArrowInvalid as e:
        raise NotForArrow(str(e)) from e

    def tables() -> Iterator[pa.Table]:
        fed = False
        try:
            for batches in _grouped(reader):
                fed = True
                table = pa.Table.from_batches(batches)
                yield pa.table([_exact(col, legacy) for col in table.columns], names=names)
        finally:  # its reads ahead stop before the stream is closed, however the reading ends
            reader.close()
        if not fed:
            yield pa.table([pa.array([], TEXT) for _ in names], names=names)

    return names, tables()


def _exact(col: Any, legacy: bool) -> Any:
    """A column with the protection taken off (:func:`~s3task.csvio.writing.unprotect`), as it is where its bytes
    hold no ``'`` at all, as most columns' do: a scan of its bytes costs a quarter of a look at each value's first."""
    import numpy as np

    from ..csvio.writing import unprotect

    for chunk in col.chunks:
        data = chunk.buffers()[2]
        if data is not None and (np.frombuffer(data, np.uint8) == ord("'")).any():
            return unprotect(col, legacy=legacy)
    return col


def _grouped(reader: Any) -> Iterator[list[pa.RecordBatch]]:
    """The reader's batches (a block each), gathered :data:`ROW_GROUP_BYTES` of the output's bytes at a time."""
    import pyarrow as pa

    group: list[pa.RecordBatch] = []
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except pa.ArrowInvalid as e:
            raise NotForArrow(str(e)) from e
        group.append(batch)
        if len(group) * BLOCK_SIZE >= ROW_GROUP_BYTES:
            yield group
            group = []
    if group:
        yield group


def ahead(items: Iterator[T]) -> Generator[T, None, None]:
    """``items``, the next one made on a thread of its own while this one is used (close it before their source:
    ``items`` is closed with it)."""
    from concurrent.futures import ThreadPoolExecutor

    end = object()
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="s3task-parquet-read") as pool:
            future = pool.submit(next, items, end)
            while (item := future.result()) is not end:
                future = pool.submit(next, items, end)
                yield item  # type: ignore[misc]
    finally:  # nothing runs it now: a generator left midway is closed here, on this thread
        close = getattr(items, "close", None)
        if close is not None:
            close()


@contextmanager
def written_behind(writer: Any) -> Iterator[Any]:
    """``write(table)``: ``writer.write_table(table)`` on a thread of its own, at most :data:`WRITES_BEHIND` tables
    behind; every table written and the writer closed at the end."""
    from concurrent.futures import ThreadPoolExecutor, wait

    pending: deque[Any] = deque()
    with ThreadPoolExecutor(1, thread_name_prefix="s3task-parquet-write") as pool, writer:

        def write(table: pa.Table) -> None:
            pending.append(pool.submit(writer.write_table, table))
            if len(pending) > WRITES_BEHIND:
                pending.popleft().result()

        try:
            yield write
        finally:
            wait(pending)
        for future in pending:
            future.result()
