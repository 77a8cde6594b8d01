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


def _text(table: pa.Table) -> pa.Table:
    import pyarrow as pa

    return pa.table([c.cast(pa.large_string()) for c in table.columns], names=table.column_names)


def reference_rows(store: ObjectStore, layout: Layout, task_id: str) -> Iterator[pa.Table]:
    """The rows of task ``task_id``'s result (its output CSV), block by block; InvalidInput if it has none."""
    import pyarrow as pa

    from ..exports.source import exact_tables, peek_bom
    from ..records import read_record

    try:
        record, _ = read_record(store, layout, task_id)
    except S3TaskError as e:
        raise InvalidInput(f"the reference table's task {task_id} cannot be read: {e}") from e
    if record.status != Status.COMPLETED or not record.output_object_path:
        raise InvalidInput(f"the reference table's task {task_id} has no result (it is {record.status.value})")
    try:
        with store.open_read(record.output_object_path) as source:
            # Its values exactly as produced: the stored CSV gives "+44 …" and "=1+1" a leading ' (formula
            # protection), which a key or a value taken must not carry.
            legacy, stream = peek_bom(source)
            names, tables = exact_tables(stream, legacy)
            fed = False
            for table in tables:
                fed = True
                yield _text(table)
            if not fed:
                yield _text(pa.table({n: pa.array([], pa.large_string()) for n in names}))
    except NotFound as e:
        raise InvalidInput(f"the reference table's task {task_id} no longer has its result file") from e
