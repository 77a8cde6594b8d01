"""Two completed results as a comparison task reads them, straight from the store block by block, each opened
only while its output's ETag is the one pinned in the comparison's input (its manifest:
:mod:`s3task.handlers.compare`), the bytes counted for its progress.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from ..errors import InvalidInput, NotFound, PreconditionFailed
from ..states import Status

if TYPE_CHECKING:
    import pyarrow as pa

    from ..handlers.compare import Pin
    from ..layout import Layout
    from ..store.base import ObjectStore


class _Counting:
    """A binary stream whose reads are counted (``moved(n)`` after each)."""

    def __init__(self, raw: Any, moved: Callable[[int], None]) -> None:
        self._raw, self._moved = raw, moved

    def read(self, n: int = -1, /) -> bytes:
        data = self._raw.read(n)
        if data:
            self._moved(len(data))
        return bytes(data)


def result_tables(
    store: ObjectStore, layout: Layout, pin: Pin, moved: Callable[[int], None], label: str
) -> Iterator[pa.Table]:
    """The rows of the result ``pin`` names, exactly as produced (the spreadsheet guard taken off), block by
    block; ``moved(n)`` as its bytes are read. InvalidInput when it is gone or changed since it was pinned."""
    from ..exports.source import exact_tables, peek_bom
    from ..records import read_record

    try:
        record, _ = read_record(store, layout, pin.task_id)
    except NotFound as e:
        raise InvalidInput(f"{label} (task {pin.task_id}) is no longer in the store") from e
    if record.status != Status.COMPLETED or not record.output_object_path:
        raise InvalidInput(f"{label} (task {pin.task_id}) has no result (it is {record.status.value})")
    try:
        with store.open_read(record.output_object_path, if_match=pin.etag) as raw:
            legacy, stream = peek_bom(cast("BinaryIO", _Counting(raw, moved)))  # read() is all it uses
            _names, tables = exact_tables(stream, legacy)
            yield from tables
    except PreconditionFailed as e:
        raise InvalidInput(f"{label} (task {pin.task_id}) changed after the comparison was made") from e
    except NotFound as e:
        raise InvalidInput(f"{label} (task {pin.task_id}) no longer has its result file") from e
