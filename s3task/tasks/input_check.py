"""Whether a stored input can be queued: it exists, has the size the uploader sent, and its header
row passes the worker's own reading of it. Rows are the worker's to judge (with line numbers, as a
failed task).

A CSV is judged on its first bytes. A workbook cannot be: its zip directory is at its end. It is
copied from the store (the version whose ETag is pinned) to a temporary file and opened with the
worker's reader, which checks the container (encrypted, .xls, not a workbook, a bomb: refused
before anything is unpacked) and reads the sheet until its header row; the sheet and header row it
took are what the worker will read.

A task type that needs columns (an email column, say: :mod:`s3task.handlers.columns`) has them
found in the header and the first rows here, as the worker would; a file without one is refused,
the column named, and the columns found are settled in the task's parameters, as the format is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import handlers
from ..csvio import INSPECT_BYTES, FormatRequest, InputFormat, read_start, resolve, spooled
from ..errors import InvalidInput, NotFound
from ..handlers import columns
from ..record import TaskRecord
from ..store.base import ObjectMeta, ObjectStore, get_start

if TYPE_CHECKING:
    import pyarrow as pa


class Judged(NamedTuple):
    """What the check settled: the format to read the input in, and the column each need was given
    (by parameter name: the task's parameters once it is queued)."""

    input_format: InputFormat
    columns: dict[str, str]


def check_input(
    store: ObjectStore, record: TaskRecord, params: Mapping[str, Any], size: int | None = None
) -> tuple[ObjectMeta, Judged]:
    """The input's size and ETag as stored, and what it is read as. One request: the file's start,
    with its size and ETag. ``params``: the task's (its step list included: ``Transitions.params_of``);
    ``size``: the uploader's; a stored file of another size is refused."""
    try:
        got = get_start(store, record.input_object_path, INSPECT_BYTES)
    except NotFound as e:
        raise InvalidInput(f"task {record.task_id} has no input file yet; upload a CSV first") from e
    if size is not None and got.meta.size != size:
        raise InvalidInput(f"the store holds {got.meta.size:,} bytes of the file's {size:,}; upload it again")
    return got.meta, judge_input(store, record, params, got.body, got.meta)


def judge_input(
    store: ObjectStore, record: TaskRecord, params: Mapping[str, Any], head: bytes, meta: ObjectMeta
) -> Judged:
    """A CSV's header (and, for a type that needs columns, its first rows), on the file's first bytes
    (``head``) — and a ``detect`` in the task's input format is settled here (as the New task page's
    preview detects it). A workbook is opened (see above)."""
    whole = len(head) >= meta.size
    kind = handlers.get(record.task_type)
    needs = kind.needs
    try:
        read_as = resolve(FormatRequest.parse(record.input_format).to_dict(), head, whole=whole)
        if read_as.is_workbook:
            read_as, start = open_workbook(store, meta, read_as, rows=bool(needs))
        else:
            start = read_start(head, whole=whole, rows=bool(needs), input_format=read_as)
    except InvalidInput as e:  # the worker's words, saying whose they are
        raise InvalidInput(f"the uploaded file cannot be processed: {e.message}") from e
    if start is None:  # a header longer than the bytes looked at; the worker judges it
        return Judged(read_as, {})
    names, rows = start
    try:
        kind.check_header(params, list(names))
        if not needs:
            return Judged(read_as, {})
        found = columns.require(needs, params, names, sample_of(rows))
    except InvalidInput as e:
        raise InvalidInput(f"the uploaded file cannot be processed: {e.message}") from e
    return Judged(read_as, found)


def sample_of(rows: pa.Table) -> Mapping[str, Sequence[str]]:
    """The first rows' values by column, as text (what a need's look at the values sees)."""
    head = rows.slice(0, columns.SAMPLE_ROWS)
    return {
        name: ["" if v is None else str(v) for v in head.column(i).to_pylist()]
        for i, name in enumerate(head.column_names)
    }


def open_workbook(
    store: ObjectStore, meta: ObjectMeta, asked: InputFormat, *, rows: bool = False
) -> tuple[InputFormat, tuple[list[str], pa.Table] | None]:
    """The workbook's format with the sheet and the header row the reader takes (asked for, or its
    defaults), and its header with (``rows``) the first block of rows (without: no rows)."""
    from ..csvio.sheetreader import WorkbookReader

    with (
        store.open_read(meta.key, if_match=meta.etag) as source,
        spooled(source, meta.size) as copy,
        WorkbookReader(copy, asked.sheet, asked.header_row) as reader,
    ):
        taken = InputFormat(kind=asked.kind, sheet=reader.sheet, header_row=reader.header_row)
        if not rows:
            return taken, (list(reader.names), reader.empty_table())
        first = next((table for table, _end in reader.tables() if table.num_rows), reader.empty_table())
        return taken, (list(reader.names), first)


def header_of(store: ObjectStore, record: TaskRecord) -> list[str]:
    """The column names of a submitted task's input, read as the worker reads it (its settled format)."""
    try:
        got = get_start(store, record.input_object_path, INSPECT_BYTES)
    except NotFound as e:
        raise InvalidInput(f"task {record.task_id} has no input file") from e
    read_as = record.read_as
    if read_as.is_workbook:
        start = open_workbook(store, got.meta, read_as)[1]
    else:
        start = read_start(got.body, whole=len(got.body) >= got.meta.size, rows=False, input_format=read_as)
    if start is None:
        raise InvalidInput(f"the header of task {record.task_id}'s file is longer than {INSPECT_BYTES:,} bytes")
    return list(start[0])
