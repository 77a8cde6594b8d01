"""A step list ("Prepare the table", issue 32) through the doors a user takes: a real worker process on S3 over
HTTP runs a list with a lookup against another task's result; the HTTP API refuses a bad list, a missing
column and someone else's reference table with words naming the step, and leaves no task behind; the CLI's
``steps check`` reports every step's problem at once and exits 1."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
import requests
from app_pages import run_as_worker
from apps.http_server import serve
from conftest import wait_for
from procs import ROOT, child_env, cli
from support import csv_bytes

from s3task.config import Settings
from s3task.layout import Layout
from s3task.states import Status
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token

ANN, BEN = Actor("ann"), Actor("ben")
AUTH = {"Authorization": "Bearer ann-token"}
ORDERS = csv_bytes([
    ["Customer", "Region", "Ordered", "Account"],
    [" Ada ", "North", "01/02/2024", "A1"],
    ["Bob", "South", "13/02/2024", "B2"],
    ["Cy", "north", "31/02/2024", "c 3"],
    ["Dee", "North", "05/03/2024", "Z9"],
])  # fmt: skip
MANAGERS = csv_bytes([["Account", "Manager"], ["A1", "Mo"], ["B2", "Jo"], ["C3", "Li"]])


def lookup_list(reference: str) -> list[dict]:
    return [
        {"step": "trim"},
        {"step": "keep_rows",
         "conditions": [{"column": "Region", "is": "equals", "value": "north", "ignore_case": True}]},
        {"step": "format_dates", "columns": ["Ordered"], "from": "DD/MM/YYYY"},
        {"step": "lookup", "reference": reference, "on": ["Account"], "take": ["Manager"],
         "match": "ignoring case and spaces"},
        {"step": "check", "column": "Customer", "required": True, "unique": True},
    ]  # fmt: skip


def rows_of(body: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))


def test_a_worker_runs_a_list_with_a_lookup_on_s3(s3_workers) -> None:
    s3 = s3_workers
    reference = s3.submit("managers", MANAGERS)
    s3.worker()
    wait_for(lambda: s3.done(reference), timeout=60 + s3.start, what="the reference task completed")
    task_id = s3.submit("orders", ORDERS, "steps", {"steps": lookup_list(reference)})
    record = wait_for(lambda: s3.done(task_id), timeout=60 + s3.start, what="the steps task completed")
    rows = rows_of(s3.store.get(record.output_object_path).body)
    assert rows == [
        {"Customer": "Ada", "Region": "North", "Ordered": "2024-02-01", "Account": "A1", "Manager": "Mo", "error": ""},
        {"Customer": "Cy", "Region": "north", "Ordered": "31/02/2024", "Account": "c 3", "Manager": "Li",
         "error": "Ordered: not a date written DD/MM/YYYY"},
        {"Customer": "Dee", "Region": "North", "Ordered": "2024-03-05", "Account": "Z9", "Manager": "",
         "error": "no match for Account in the reference table"},
    ]  # fmt: skip
    assert (record.row_count, record.processed_count, record.error_count) == (3, 4, 2)
    assert [(c["step"], c["rows_in"], c["rows_out"], c["cells_changed"]) for c in record.step_counts] == [
        (1, 4, 4, 1),  # " Ada " trimmed
        (2, 4, 3, 0),  # Bob's South row left out
        (3, 3, 3, 2),  # two dates rewritten; 31/02 left as it was, with an error
        (4, 3, 3, 2),  # two rows matched, one column taken
        (5, 3, 3, 0),
    ]
    s3.service.ensure_output(Actor("alice"), task_id, "errors-xlsx")  # the worker kept each row's input row
    with s3.service.open_output(Actor("alice"), task_id, "errors-xlsx") as f:
        book = openpyxl.load_workbook(io.BytesIO(f.read())).active
    assert [(r[1].value, r[2].value) for r in book.iter_rows(min_row=2)] == [("4", "Cy"), ("5", "Dee")]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[str, TaskService]]:
    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    tokens = TokenTable({hash_token("ann-token"): ANN})
    with serve(create_app(Settings.load({"store": str(store)}, {}), tokens=tokens)) as base:
        yield base, service


def post(base: str, path: str, **body: object) -> requests.Response:
    return requests.post(base + path, json=body or None, headers=AUTH, timeout=30)


@pytest.mark.parametrize(
    ("steps", "words"),
    [
        ([{"step": "sort_rows"}], "Step 1: there is no step 'sort_rows'"),
        ([{"step": "trim"}, {"step": "check", "column": "Customer", "pattern": "(["}],
         "Step 2 (Check values): the pattern '([' is not a regular expression"),
        ([{"step": "format_dates", "columns": ["Ordered"], "from": "DD/MM/YEAR"}],
         "Step 1 (Change date format): Written as now: 'DD/MM/YEAR' is not a date format"),
        ([], "add at least one step"),
    ],
)  # fmt: skip
def test_the_api_refuses_a_bad_list_naming_the_step_and_makes_no_task(
    api: tuple[str, TaskService], steps: list, words: str
) -> None:
    base, service = api
    refused = post(base, "/api/tasks", name="orders", type="steps", parameters={"steps": steps})
    assert refused.status_code == 400, refused.text
    assert words in refused.json()["message"]
    assert service.list(ANN).tasks == []


def test_a_missing_column_is_refused_at_submit_and_the_task_is_not_queued(api: tuple[str, TaskService]) -> None:
    base, service = api
    steps = [{"step": "drop_columns", "columns": ["Region"]},
             {"step": "keep_rows", "conditions": [{"column": "Region", "is": "is_empty"}]}]  # fmt: skip
    created = post(base, "/api/tasks", name="orders", type="steps", parameters={"steps": steps})
    assert created.status_code == 201, created.text
    upload = created.json()["upload"]
    assert requests.put(upload["url"], data=ORDERS, headers=upload["headers"], timeout=30).status_code == 200
    task_id = created.json()["task"]["task_id"]
    submitted = post(base, f"/api/tasks/{task_id}/submit")
    assert submitted.status_code == 400, submitted.text
    message = submitted.json()["message"]
    assert "Step 2 (Keep rows): the column 'Region' is not in the table (Step 1 (Remove columns) removed" in message
    assert service.get(ANN, task_id).status != Status.QUEUED


def test_a_lookup_may_only_read_its_users_own_results(
    api: tuple[str, TaskService], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, service = api
    bens = service.submit_file(BEN, "bens managers", "copy", {}, MANAGERS)
    refused = post(base, "/api/tasks", name="orders", type="steps", parameters={"steps": lookup_list(bens.task_id)})
    assert refused.status_code == 403, refused.text
    assert f"task {bens.task_id} belongs to ben" in refused.json()["message"]
    waiting = post(base, "/api/tasks", name="o", type="steps", parameters={"steps": lookup_list("0" * 26)})
    assert waiting.status_code == 400 and "Step 4 (Look up columns" in waiting.json()["message"]
    anns = service.submit_file(ANN, "ann's managers", "copy", {}, MANAGERS)
    run_as_worker(service, anns.task_id, MANAGERS)
    monkeypatch.setattr("s3task.tasks.references.MAX_REFERENCE_ROWS", 2)  # the API server runs in this process
    too_big = post(base, "/api/tasks", name="o", type="steps", parameters={"steps": lookup_list(anns.task_id)})
    assert too_big.status_code == 400, too_big.text
    assert too_big.json()["message"] == (
        f"Step 4 (Look up columns from a reference table): task {anns.task_id}'s result has 3 rows; "
        "a lookup takes at most 2"
    )
    assert sorted(t.task_name for t in service.list(ANN).tasks) == ["ann's managers", "bens managers"]


def test_steps_check_names_every_problem_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "orders.csv").write_bytes(ORDERS)
    (tmp_path / "steps.json").write_text(json.dumps([
        {"step": "rename_columns", "names": {"Region": "Area"}},
        {"step": "keep_rows", "conditions": [{"column": "Region", "is": "equals", "value": "North"}]},
        {"step": "check", "column": "Customer", "pattern": "("},
        {"step": "trim", "columns": ["Customer"]},
    ]))  # fmt: skip
    env = child_env(path=(ROOT,), S3TASK_USER="ann")
    done = cli("--store", str(tmp_path / "store"), "steps", "check", "steps.json", "orders.csv", cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "  Step 1 (Rename columns): 4 rows in, 4 out"
    assert lines[1].startswith("✗ Step 2 (Keep rows): the column 'Region' is not in the table (Step 1 (Rename")
    assert lines[2].startswith("✗ Step 3 (Check values): the pattern '(' is not a regular expression")
    assert lines[3] == "  Step 4 (Remove spaces at the ends): 4 rows in, 4 out, 1 cell changed"
    assert "2 problems: nothing was run." in done.stderr
