"""A lookup's reference table: a completed task's result, read from the store as the exports read it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..errors import InvalidInput, NotFound, S3TaskError
from ..states import Status

if TYPE_CHECKING:
    import pyarrow as pa

    from ..layout import Layout
    from ..store.base import ObjectStore


def reference_rows(store: ObjectStore, layout: Layout, task_id: str) -> Iterator[pa.Table]:
    """The rows of task ``task_id``'s result (its output CSV), block by block; InvalidInput if it has none."""
    from ..csvio import DEFAULT_BLOCK_SIZE, CsvReader
    from ..records import read_record

    try:
        record, _ = read_record(store, layout, task_id)
    except S3TaskError as e:
        raise InvalidInput(f"the reference table's task {task_id} cannot be read: {e}") from e
    if record.status != Status.COMPLETED or not record.output_object_path:
        raise InvalidInput(f"the reference table's task {task_id} has no result (it is {record.status.value})")
    try:
        with store.open_read(record.output_object_path) as source:
            reader = CsvReader(source, DEFAULT_BLOCK_SIZE, None)
            fed = False
            for table, _end in reader.tables():
                fed = True
                yield table
            if not fed:
                yield reader.empty_table()
    except NotFound as e:
        raise InvalidInput(f"the reference table's task {task_id} no longer has its result file") from e
