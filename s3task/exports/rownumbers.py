"""Which input row each output row came from, for a task type that leaves rows out (``numbers_rows``).

The worker keeps them beside the output (:data:`s3task.layout.ROWS`, rising record numbers). With them the
input, read again, is cut down to the rows the output has, in the same order — so the errors workbook and
the combined result pair output row *k* with input row *k* exactly as they do for a task type whose rows
are its input's one for one, and every row keeps its row number in the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import CannotExport, NotFound
from ..layout import Layout
from ..record import TaskRecord
from ..store.base import ObjectStore

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


def numbers_rows(task_type: str) -> bool:
    from .. import handlers
    from ..errors import S3TaskError

    try:
        return handlers.get(task_type).numbers_rows
    except S3TaskError:
        return False


def kept_rows(store: ObjectStore, record: TaskRecord) -> list[np.ndarray] | None:
    """The output's input row numbers, block by block (None: the task type keeps none)."""
    import pyarrow as pa

    if not numbers_rows(record.task_type) or not record.output_object_path:
        return None
    try:
        body = store.get(Layout.rows_key_of(record.output_object_path)).body
    except NotFound as e:
        raise CannotExport("the task's output does not say which input row each of its rows came from") from e
    with pa.ipc.open_stream(body) as stream:
        return [batch.column(0).to_numpy() for batch in stream]


def picked(inputs: Iterator[tuple[pa.Table, Any]], wanted: list[np.ndarray]) -> Iterator[tuple[pa.Table, Any]]:
    """The input's (table, row numbers) blocks cut down to the records ``wanted`` (rising), in order."""
    import numpy as np
    import pyarrow as pa

    want = np.concatenate(wanted) if wanted else np.zeros(0, np.int64)
    if len(want) > 1 and not (np.diff(want) > 0).all():
        raise CannotExport("the output's input rows are not in the file's order")
    base, at = 0, 0
    for table, rows in inputs:
        end = base + table.num_rows
        stop = at + int(np.searchsorted(want[at:], end))
        local = want[at:stop] - base
        at, base = stop, end
        if len(local):
            yield table.take(pa.array(local)), np.asarray(rows)[local]
    if at != len(want):
        raise CannotExport("the output names input rows the input does not have")
