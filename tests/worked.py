"""A submitted task worked as a worker works it, in this process: its stored input through the worker's engine
(``s3task.processing.run``), the output stored and the task completed with the engine's counts."""

from __future__ import annotations

import io
from typing import Any

from s3task import lifecycle, processing, task_steps
from s3task.record import TaskRecord
from s3task.records import update_record
from s3task.store.base import PutMode


def work(service: Any, task_id: str) -> TaskRecord:
    """Claim the queued task ``task_id``, run it over its stored input, store its output and complete it."""
    store, layout = service.store, service.layout
    holder: dict[str, Any] = {}

    def claim(r: TaskRecord, now: object) -> TaskRecord:
        new, holder["lease"] = lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)
        return new

    record = update_record(store, layout, task_id, claim)
    sink, rows = io.BytesIO(), io.BytesIO()
    with store.open_read(record.input_object_path) as raw:
        source = io.BytesIO(raw.read())  # a workbook is read from a seekable copy, as the worker spools it
    counts = processing.run(
        record.task_type,
        task_steps.params_of(store, layout, record),  # its step list too, as the worker reads it
        source,
        sink,
        lambda _p: None,
        input_format=record.read_as,
        rows=rows,
    )
    if rows.tell():  # a type that leaves rows out: which input row each output row came from, as the worker keeps
        store.put(layout.rows_key(task_id, record.attempt_id), rows.getvalue(), PutMode.OVERWRITE)
    key = layout.output_key(task_id, record.attempt_id)
    store.put(key, sink.getvalue(), PutMode.CREATE, content_type="text/csv")
    return update_record(
        store,
        layout,
        task_id,
        lambda r, now: lifecycle.complete(
            r, now, lease=holder["lease"], output_path=key, progress=counts, row_count=counts.row_count
        ),
    )


def worked(
    service: Any,
    actor: Any,
    data: bytes,
    *,
    name: str = "March list",
    task_type: str = "email_enrichment",
    input_format: dict[str, Any] | None = None,
    payload: dict[str, Any] | None = None,
) -> TaskRecord:
    """A new task over ``data``: created, its input stored, submitted and worked (:func:`work`)."""
    task_id = service.create(actor, name, task_type, payload, input_format=input_format).record.task_id
    service.upload_input(actor, task_id, data)
    service.submit(actor, task_id)
    return work(service, task_id)
