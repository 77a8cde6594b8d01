"""The API keeps the promises of its published OpenAPI document, found by Schemathesis on a live server.

A real uvicorn server on 127.0.0.1 serves the API on a local store in a temporary
directory. Schemathesis takes the document the server publishes at
``/api/openapi.json`` (loaded at collection from the generator the server calls;
a test checks the two are the same) and drives every operation in it, with a
valid bearer token, through generated input, schema-valid and not (its examples,
coverage and fuzzing phases), and checks each answer: no 5xx, a documented status, the documented
content type and headers, a body that matches the schema (errors included: each
status's body is ``{"code", "message"}`` with one of the codes documented for it),
input the document rules out refused, 405 with ``Allow`` for undocumented methods,
401 without the token.

Random task ids name no task, so :func:`test_operations_on_real_tasks_answer_as_documented`
also runs every operation on one task against seeded tasks in every state, and
:func:`test_the_task_schema_holds_every_field_the_api_returns` pins the task
schema to the record. Bounded and reproducible: a fixed number of examples per
operation, a fixed seed, no example database.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from apps.http_server import serve
from hypothesis import HealthCheck, settings

from s3task import lifecycle
from s3task.config import Settings
from s3task.counts import LABELS as COUNT_LABELS
from s3task.ids import _ID_RE
from s3task.layout import Layout
from s3task.lifecycle import Lease, Progress, Status
from s3task.record import TaskRecord
from s3task.records import update_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.models import HIDDEN, TASK_ID_PATTERN, Task, task_of
from s3task.web.openapi import OPERATIONS, openapi_document
from s3task.web.tokens import TokenTable, hash_token
from s3task.web.transfer import signer_for

ALICE, BOB = Actor("alice"), Actor("bob")
TOKEN = "contract-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CSV = b"name,city\nAda,London\n"
#: Examples per operation and generation mode: enough to reach every branch of these small handlers,
#: few enough for the whole file to take well under a minute on two busy cores.
EXAMPLES = 50
SEED = 20_240_613


@dataclasses.dataclass
class Live:
    base: str
    service: TaskService


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("contract") / "store"
    store, layout = LocalStore(root), Layout()
    service = TaskService(store, layout, url_seconds=900, url_signer=signer_for(store))
    tokens = TokenTable({hash_token(TOKEN): ALICE, hash_token("bob-token"): BOB})
    app = create_app(Settings.load({"store": str(root), "max_upload_mb": 1}, {}), service=service, tokens=tokens)
    with serve(app) as base:
        yield Live(base, service)


def _config() -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "headers": AUTH,
            "generation": {"mode": "all", "max-examples": EXAMPLES, "deterministic": True, "database": "none"},
            "checks": {
                # A schema-valid request may still be refused (400): the document cannot say which task types are
                # registered at run time, which parameters each takes, or that a name must not be blank. Every
                # other check is on, and input the document rules out must be refused.
                "positive_data_acceptance": {"enabled": False},
            },
        }
    )


#: The document the server publishes is this one (test_the_published_document_is_the_generated_one…); it is
#: loaded at collection so that each operation is a test of its own.
schema = schemathesis.openapi.from_dict(openapi_document(), config=_config())


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
)
def test_every_operation_answers_as_documented(case: schemathesis.Case, live: Live) -> None:
    case.call_and_validate(base_url=live.base, headers=AUTH)


def test_the_published_document_is_the_generated_one_and_covers_every_operation(live: Live) -> None:
    doc = requests.get(live.base + "/api/openapi.json", timeout=10).json()
    assert doc == openapi_document()
    published = {(method.upper(), path) for path, ops in doc["paths"].items() for method in ops}
    assert published == {(op.method, "/api" + op.path) for op in OPERATIONS}


# --- every operation on one task, against real tasks in every state ------------------------------------


def _worker_step(service: TaskService, task_id: str, finish: str) -> None:
    """Claim a queued task as a worker would, then leave it running, completed or failed."""
    store, layout = service.store, service.layout

    def claim(record: TaskRecord, now: Any) -> TaskRecord:
        return lifecycle.claim(record, now, worker_id="contract-worker", lease_seconds=60)[0]

    record = update_record(store, layout, task_id, claim)
    lease = Lease(record.attempt_id, record.lease_token or "", "contract-worker")
    if finish == "completed":
        key = layout.output_key(task_id, lease.attempt_id)
        store.put(key, b"name,city,error\nAda,London,\n", PutMode.CREATE, content_type="text/csv")
        progress = Progress(processed_count=1, success_count=1, error_count=0, bytes_processed=len(CSV))
        update_record(
            store,
            layout,
            task_id,
            lambda r, now: lifecycle.complete(r, now, lease=lease, output_path=key, progress=progress, row_count=1),
        )
    elif finish in ("failed", "failed for good"):
        permanent = finish == "failed for good"
        update_record(
            store,
            layout,
            task_id,
            lambda r, now: lifecycle.fail(r, now, lease=lease, error="boom", permanent=permanent),
        )


def seeded_tasks(service: TaskService) -> dict[str, str]:
    """A task of alice's in every state, and one of bob's: their ids by what they are."""
    ids: dict[str, str] = {}
    for what in ("created", "uploaded", "queued", "running", "completed", "failed", "failed for good", "abandoned"):
        task_id = service.create(ALICE, f"a task {what}", "copy").record.task_id
        if what != "created":
            service.upload_input(ALICE, task_id, CSV)
        if what not in ("created", "uploaded"):
            service.submit(ALICE, task_id)
        if what in ("running", "completed", "failed", "failed for good"):
            _worker_step(service, task_id, what)
        if what == "abandoned":
            service.cancel(ALICE, task_id)
        ids[what] = task_id
    ids["bob's"] = service.create(BOB, "bob's task", "copy").record.task_id
    return ids


#: The operations on one task, in the order they are run on each seeded task (the ones that change it last).
ON_ONE_TASK = ("get_task", "task_output", "submit_task", "retry_task", "cancel_task", "get_task")


def test_operations_on_real_tasks_answer_as_documented(live: Live) -> None:
    """Random ids name no task: here every operation on one task meets tasks in every state, as alice."""
    ids = seeded_tasks(live.service)
    documented = set(openapi_document()["components"]["schemas"]["Task"]["properties"])
    seen: dict[str, set[int]] = {}
    for what, task_id in ids.items():
        for operation_id in ON_ONE_TASK:
            case = schema.find_operation_by_id(operation_id).Case(path_parameters={"task_id": task_id})
            response = case.call_and_validate(base_url=live.base, headers=AUTH)
            seen.setdefault(operation_id, set()).add(response.status_code)
            if "task" in response.json():  # no field beyond the documented ones (the schema lets a newer
                assert set(response.json()["task"]) <= documented, (what, operation_id)  # s3task's through)
    # Each operation answered with success and with refusals: the bodies of both were checked.
    assert seen == {
        "get_task": {200},
        "task_output": {200, 403, 409},
        "submit_task": {200, 400, 403, 409},
        "retry_task": {200, 403, 409},
        "cancel_task": {200, 403, 409},
    }, seen
    # Pages of these tasks, with a cursor, and only alice's.
    listing = schema.find_operation_by_id("list_tasks")
    page = listing.Case(query={"limit": 4}).call_and_validate(base_url=live.base, headers=AUTH).json()
    assert len(page["tasks"]) == 4 and page["next_cursor"]
    for query in ({"limit": 4, "cursor": page["next_cursor"]}, {"mine": "true"}):
        listed = listing.Case(query=query).call_and_validate(base_url=live.base, headers=AUTH).json()
        assert listed["tasks"] and all(set(task) <= documented for task in listed["tasks"])


# --- the task schema is the record's --------------------------------------------------------------------


def test_the_task_schema_holds_every_field_the_api_returns() -> None:
    doc = openapi_document()["components"]["schemas"]
    task = doc["Task"]
    record_fields = {f.name for f in dataclasses.fields(TaskRecord)} - HIDDEN - {"extra"}
    computed = {"progress", "terminal", "retryable", "cancellable", "output_kind", *COUNT_LABELS}
    assert set(task["properties"]) == record_fields | computed == set(Task.model_fields)
    assert set(task["required"]) == set(task["properties"])  # every field is in every task
    # What a handler returns for a record with every field set has exactly these keys.
    values = {"status": Status.RUNNING, "retry_at": "2026-01-01T00:00:00.000Z", "row_count": 3, "worker_id": "w"}
    record = TaskRecord(task_id="7ZZZZZZZZZZZZZZZZZZZZZZZZZ", task_name="n", created_by="a", task_type="copy", **values)
    assert set(task_of(record, retryable=False, cancellable=True).model_dump(mode="json")) == set(task["properties"])
    # The status values and the id pattern are the record's and the id module's own.
    assert doc["Status"]["enum"] == [s.value for s in Status]
    assert task["properties"]["task_id"]["pattern"] == TASK_ID_PATTERN
    assert f"^{_ID_RE.pattern}$" == TASK_ID_PATTERN
    # The record's extra fields (written by a newer s3task) pass through; the workers' own never leave.
    record.extra = {"added_later": 1}
    record.lease_token, record.write_id = "secret", "w1"
    shown = task_of(record, retryable=False, cancellable=False).model_dump(mode="json")
    assert shown["added_later"] == 1 and "lease_token" not in shown and "write_id" not in shown


def test_the_docs_table_names_every_code_the_document_does() -> None:
    """docs/API.md's table of errors lists, per status, at least the codes the document gives that status."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "API.md").read_text()
    rows = dict(re.findall(r"^\| (\d{3}) \| (.+) \|$", text, re.M))
    for name, spec in openapi_document()["components"]["schemas"].items():
        if name.startswith("Error"):
            status = name.removeprefix("Error")
            code = spec["properties"]["code"]  # one code is a const, more an enum
            documented = set(code["enum"]) if "enum" in code else {code["const"]}
            assert documented <= set(re.findall(r"`(\w+)`", rows[status])), status
