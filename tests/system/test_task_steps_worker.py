"""A real worker process runs the step list a task was made with, read from beside its record at the ETag
the record pins (s3task.task_steps): a list changed after the task was made is never run — the task fails
for good at its first attempt, in words — while a task whose list is intact runs; ``s3task show`` and the
API's ``GET /api/tasks/{id}/steps`` give the list back."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import requests
from apps.http_server import serve
from procs import cli, run, worker_args
from support import csv_bytes

from s3task.config import Settings
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token

ANN, BEN = Actor("ann"), Actor("ben")
ROWS = csv_bytes([["Name", "City"], [" Ada ", "Oslo"], ["Bob", "Rome"]])
TRIM = [{"step": "trim"}]


def test_a_list_changed_after_the_task_was_made_fails_it_for_good_and_an_intact_one_runs(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store, layout = LocalStore(root), Layout()
    service = TaskService(store, layout)
    intact = service.submit_file(ANN, "Intact", "steps", {"steps": TRIM}, ROWS).task_id
    changed = service.submit_file(ANN, "Changed", "steps", {"steps": TRIM}, ROWS).task_id
    drop_all = json.dumps({"steps": [{"step": "drop_columns", "columns": ["Name", "City"]}]}).encode()
    store.put(layout.steps_key(changed), drop_all, PutMode.OVERWRITE)  # someone with store access, after the create

    run(worker_args(str(root), "--once"), timeout=None, check=True)

    done = read_record(store, layout, intact)[0]
    assert done.status == "completed"
    output = store.get(done.output_object_path or "").body.decode("utf-8-sig")
    assert list(csv.reader(io.StringIO(output)))[1][:2] == ["Ada", "Oslo"]  # trimmed, as the list it was made with
    refused = read_record(store, layout, changed)[0]
    assert refused.state.value == "failed_for_good" and refused.attempt_id == 1  # no attempt more
    assert "was changed after the task was made; make the task again" in (refused.last_error or "")
    assert refused.output_object_path is None

    # The refused task is still shown, with why its list is not (found by the outside review: show exited 1).
    still = cli("--store", str(root), "--as", "ann", "show", changed, "--json")
    assert still.returncode == 0 and json.loads(still.stdout)["status"] == "failed"
    assert "was changed after the task was made" in still.stderr
    shown = json.loads(cli("--store", str(root), "--as", "ann", "show", intact, "--json", check=True).stdout)
    assert shown["payload"] == {"steps": TRIM} and shown["steps_etag"] == done.steps_etag

    tokens = TokenTable({hash_token("ann-token"): ANN, hash_token("ben-token"): BEN})
    with serve(create_app(Settings(store=str(root)), service=service, tokens=tokens)) as base:
        got = requests.get(
            f"{base}/api/tasks/{intact}/steps", headers={"Authorization": "Bearer ann-token"}, timeout=30
        )
        assert got.status_code == 200 and got.json() == {"steps": TRIM}
        task = requests.get(f"{base}/api/tasks/{intact}", headers={"Authorization": "Bearer ann-token"}, timeout=30)
        assert task.json()["task"]["payload"] == {} and task.json()["task"]["steps_etag"] == done.steps_etag
        # Whoever may see the task sees its list, as they see its other parameters in the task itself.
        other = requests.get(
            f"{base}/api/tasks/{intact}/steps", headers={"Authorization": "Bearer ben-token"}, timeout=30
        )
        assert other.status_code == 200 and other.json() == {"steps": TRIM}
        plain = service.submit_file(ANN, "Copy", "copy", None, ROWS).task_id
        none = requests.get(
            f"{base}/api/tasks/{plain}/steps", headers={"Authorization": "Bearer ann-token"}, timeout=30
        )
        assert none.status_code == 400 and "has no list of steps" in none.json()["message"]
