"""A "Prepare the table" task's page lists its steps in words and, once it has run, what each did over the
whole file (issue 32: rows in, rows out, cells changed, as the worker recorded them)."""

from __future__ import annotations

import io
from collections.abc import Callable

from app_pages import app, goto, options, service, store_dir, texts  # noqa: F401
from streamlit.testing.v1 import AppTest

from s3task import lifecycle, processing
from s3task.progress import Progress
from s3task.records import update_record
from s3task.store.base import PutMode
from s3task.tasks import Actor, TaskService

ANN = Actor("user")
ORDERS = b"Customer,Region\n Ada ,North\nBob,South\nCy,North\n"
STEPS = [
    {"step": "trim"},
    {"step": "keep_rows", "conditions": [{"column": "Region", "is": "equals", "value": "North"}]},
    {"step": "change_case", "to": "upper", "off": True},
]


def ran(tasks: TaskService, task_id: str) -> None:
    """The worker's engine over the task's input, its counts written as a worker completes the task."""
    store, layout = tasks.store, tasks.layout
    update_record(store, layout, task_id, lambda r, now: lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)[0])
    record = tasks.get(ANN, task_id)
    lease = lifecycle.Lease(record.attempt_id, record.lease_token or "", "w1")
    sink = io.BytesIO()
    done: Progress = processing.run("steps", tasks.steps.parameters(record), io.BytesIO(ORDERS), sink, lambda p: None)
    key = layout.output_key(task_id, record.attempt_id)
    store.put(key, sink.getvalue(), PutMode.CREATE)
    rows = done.row_count
    update_record(
        store, layout, task_id,
        lambda r, now: lifecycle.complete(r, now, lease=lease, output_path=key, progress=done, row_count=rows),
    )  # fmt: skip


def test_the_page_shows_each_steps_effect_over_the_whole_file(
    app: Callable[..., AppTest],  # noqa: F811
    service: TaskService,  # noqa: F811
) -> None:
    task_id = service.submit_file(ANN, "orders", "steps", {"steps": STEPS}, ORDERS).task_id
    at = app("user")
    at.query_params["id"] = task_id
    goto(at, "pages/task.py")
    assert "once the task has run" in texts(at)
    ran(service, task_id)
    at.query_params["id"] = task_id
    goto(at, "pages/task.py")
    steps = next(d.value for d in at.dataframe if "What it does" in d.value.columns)
    assert steps["What it does"].tolist() == ["Remove spaces at the ends", "Keep rows", "Change case (off)"]
    assert steps["Rows in"].tolist()[:2] == [3, 3] and steps["Rows out"].tolist()[:2] == [3, 2]
    assert steps["Cells changed"].tolist()[:2] == [1, 0]
    assert steps["Rows in"].isna().tolist()[2]  # the step that is off did nothing
