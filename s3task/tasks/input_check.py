"""Whether a stored input can be queued: it exists, has the size the uploader sent, and its header
row passes the worker's own reading of it. Rows are the worker's to judge (with line numbers, as a
failed task).

A CSV is judged on its first bytes. A workbook cannot be: its zip directory is at its end. It is
copied from the store (the version whose ETag is pinned) to a temporary file and opened with the
worker's reader, which checks the container (encrypted, .xls, not a workbook, a bomb: refused
before anything is unpacked) and reads the sheet until its header row; the sheet and header row it
took are what the worker will read."""

from __future__ import annotations

from ..csvio import INSPECT_BYTES, InputFormat, parse_input_format, read_start, resolve, spooled
from ..errors import InvalidInput, NotFound
from ..record import TaskRecord
from ..store.base import ObjectMeta, ObjectStore, get_start


def check_input(store: ObjectStore, record: TaskRecord, size: int | None = None) -> tuple[ObjectMeta, InputFormat]:
    """The input's size and ETag as stored, and the format to read it in. One request: the file's start,
    with its size and ETag. ``size``: the uploader's; a stored file of another size is refused."""
    try:
        got = get_start(store, record.input_object_path, INSPECT_BYTES)
    except NotFound as e:
        raise InvalidInput(f"task {record.task_id} has no input file yet; upload a CSV first") from e
    if size is not None and got.meta.size != size:
        raise InvalidInput(f"the store holds {got.meta.size:,} bytes of the file's {size:,}; upload it again")
    return got.meta, judge_input(store, record, got.body, got.meta)


def judge_input(store: ObjectStore, record: TaskRecord, head: bytes, meta: ObjectMeta) -> InputFormat:
    """A CSV's header only, on the file's first bytes (``head``) — and a ``detect`` in the task's input
    format is settled here (as the New task page's preview detects it). A workbook is opened (see above)."""
    whole = len(head) >= meta.size
    try:
        read_as = resolve(parse_input_format(record.input_format, allow_detect=True), head, whole=whole)
        if read_as.is_workbook:
            return open_workbook(store, meta, read_as)
        read_start(head, whole=whole, rows=False, input_format=read_as)
    except InvalidInput as e:  # the worker's words, saying whose they are
        raise InvalidInput(f"the uploaded file cannot be processed: {e.message}") from e
    return read_as


def open_workbook(store: ObjectStore, meta: ObjectMeta, asked: InputFormat) -> InputFormat:
    """The workbook's format with the sheet and the header row the reader takes (asked for, or its defaults)."""
    from ..csvio.sheetreader import WorkbookReader

    with (
        store.open_read(meta.key, if_match=meta.etag) as source,
        spooled(source, meta.size) as copy,
        WorkbookReader(copy, asked.sheet, asked.header_row) as reader,
    ):
        return InputFormat(kind=asked.kind, sheet=reader.sheet, header_row=reader.header_row)
