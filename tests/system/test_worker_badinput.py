"""The bad-input corpus through a real worker: every file ends in a clear state, and the queue keeps moving."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from badinput import corpus
from procs import child_env, run, worker_args

from s3task.errors import InvalidInput
from s3task.records import read_record
from s3task.store import open_store
from s3task.tasks import Actor, TaskService

ROOT = Path(__file__).resolve().parents[2]
ALICE = Actor("alice")


def test_each_bad_input_ends_clearly_and_the_task_behind_still_runs(tmp_path: Path) -> None:
    store_dir = tmp_path / "data"
    store, layout = open_store(str(store_dir))
    service = TaskService(store, layout)
    queued: dict[str, object] = {}
    refused_at_submit: list[str] = []
    for case in corpus():
        task_id = service.create(ALICE, case.name, "copy").record.task_id
        service.upload_input(ALICE, task_id, case.data)
        try:
            service.submit(ALICE, task_id)
        except InvalidInput as e:
            # Caught before it was queued: the user is told at once and can upload again.
            assert len(str(e)) > 20, (case.name, str(e))
            assert read_record(store, layout, task_id)[0].status == "created"
            refused_at_submit.append(case.name)
            continue
        queued[task_id] = case
    good = service.create(ALICE, "the good one behind", "copy").record.task_id
    service.upload_input(ALICE, good, b"a,b\n1,2\n")
    service.submit(ALICE, good)

    args = worker_args(str(store_dir), "--once", "--poll-interval", "0.1")
    proc = run(args, env=child_env(S3TASK_RETRY_BACKOFF_SECONDS="0.1"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr

    assert read_record(store, layout, good)[0].status == "completed"
    for task_id, case in queued.items():
        record = read_record(store, layout, task_id)[0]
        if case.error is None:
            assert record.status == "completed", (case.name, record.last_error)
            body = io.BytesIO(store.get(record.output_object_path).body)
            out = pd.read_csv(body, dtype=str, keep_default_na=False)
            assert len(out) == len(case.rows) - 1, case.name
        else:
            # Bad input is a permanent failure: one attempt, a message naming the problem.
            assert (record.status, record.final, record.attempt_id) == ("failed", True, 1), case.name
            assert case.error in record.last_error, (case.name, record.last_error)
    assert store.list_keys(layout.active_root) == []
    assert len(queued) + len(refused_at_submit) == len(corpus())
    assert len(queued) > len(corpus()) // 2  # most bad files are judged by the worker, with line numbers
