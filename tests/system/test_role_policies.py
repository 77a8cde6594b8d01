"""The App and Worker policies of docs/TRANSFERS.md ("Permissions (least privilege, per role)"), enforced:
moto's HTTP server on 127.0.0.1 with its IAM checks on (tests/system/test_inbox_policy_enforced.py), one IAM
user per role holding exactly the policy the docs give, read from the docs themselves.

As the App: a TaskService whose client signs as that user makes tasks (a copy, through its presigned upload
URL; a step list, kept beside its record; a task with rows with errors), cancels one waiting for its file with
an upload in parts open, saves and removes a recipe, pauses and resumes an inbox, makes the download copies
(exact CSV, Excel, Parquet, errors workbook, a view, a chart's summary), sends corrected rows and makes the
combined result, and downloads through a presigned URL. As the Worker: a real ``worker.py`` runs every task
to completed (a step list's with its ``.rows``, a comparison's with its summary), sweeps a file dropped in a
recipe's inbox into a task and runs it, and says it is alive. Each
role is also refused one thing the other does. Nothing either logs says the store refused it."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import boto3
import openpyxl
import pytest
import requests
from botocore.exceptions import ClientError
from moto.core.authorization import disable_iam_authentication, enable_iam_authentication
from procs import ROOT, child_env
from support import csv_bytes

from s3task import live, query
from s3task.errors import InvalidInput
from s3task.layout import Layout
from s3task.records import read_record
from s3task.states import Status
from s3task.store.s3 import _DATA_CONFIG, _RECORD_CONFIG, S3Store
from s3task.tasks import Actor, TaskService

pytestmark = pytest.mark.slow

DOC = ROOT / "docs" / "TRANSFERS.md"
PREFIX = "batch-tasks"
LAYOUT = Layout(PREFIX)
ANN = Actor("ann")
ROOT_USER = Actor("root", operator=True)
ROWS = csv_bytes([["name", "email"], [" Ada ", "ada@example.com"], ["Bob", "bob at example.com"]])
TRIM = [{"step": "trim"}]
#: The worker's settings: every wait on it is these plus its measured start-up (the ``startup`` fixture).
POLL, LEASE, INBOX_EVERY = 0.2, 4.0, 1.0


def policy_of(role: str, bucket: str) -> str:
    """The JSON block that follows the ``**{role}**`` paragraph of the docs' permissions section, for ``bucket``."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Permissions (least privilege, per role)") :]
    after = section[section.index(f"\n**{role}**") :]
    block = re.search(r"```json\n(.*?)\n```", after, re.S)
    assert block is not None, f"no policy after **{role}** in {DOC}"
    body = re.sub(r"\bPREFIX\b", PREFIX, re.sub(r"\bBUCKET\b", bucket, block.group(1)))
    parsed = json.loads(body)
    assert parsed["Statement"], role
    return body


def make_user(endpoint: str, name: str, policy: str) -> dict[str, str]:
    """An IAM user holding only ``policy`` (made while IAM is not checked); its keys."""
    with disable_iam_authentication():
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1")
        iam.create_user(UserName=name)
        iam.put_user_policy(UserName=name, PolicyName=name, PolicyDocument=policy)
        key = iam.create_access_key(UserName=name)["AccessKey"]
    return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}


def client_as(endpoint: str, keys: dict[str, str], config: Any = None) -> Any:
    session = boto3.session.Session(
        aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    )
    return session.client("s3", endpoint_url=endpoint, config=config)


def refused(call: Any) -> str:
    with pytest.raises(ClientError) as e:
        call()
    return str(e.value.response["Error"]["Code"])


@pytest.fixture
def roles(moto_http_bucket: tuple[str, str]) -> Iterator[tuple[str, str, dict[str, str], dict[str, str], Any]]:
    """(endpoint, bucket, the App's keys, the Worker's keys, an s3 client of a user allowed everything);
    IAM checked meanwhile."""
    endpoint, bucket = moto_http_bucket
    app = make_user(endpoint, "app", policy_of("App", bucket))
    worker = make_user(endpoint, "worker", policy_of("Worker", bucket))
    everything = json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    )
    admin = client_as(endpoint, make_user(endpoint, "admin", everything))
    with enable_iam_authentication():
        yield endpoint, bucket, app, worker, admin


def keys_under(admin: Any, bucket: str, prefix: str) -> list[str]:
    pages = admin.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def through_link(url: str | None, keys: dict[str, str], method: str, **kw: Any) -> requests.Response:
    """A request through a presigned URL the App made. Moto's IAM checks need an Authorization header (a
    presigned request has none: a 500), so the URL is checked to be signed with the App's key, and sent with
    the checks off; what it may do is the App's own PutObject and GetObject, which the service's own calls
    prove. Only while no worker process runs: its requests would go unchecked meanwhile."""
    assert url is not None
    assert f"X-Amz-Credential={keys['AWS_ACCESS_KEY_ID']}%2F" in url, url
    with disable_iam_authentication():
        return requests.request(method, url, timeout=30, **kw)


def fixed_errors_book(service: TaskService, task_id: str) -> bytes:
    """The task's errors workbook with its one bad address corrected, as a person sends it back."""
    service.ensure_output(ANN, task_id, "errors-xlsx")
    with service.open_output(ANN, task_id, "errors-xlsx") as f:
        book = openpyxl.load_workbook(io.BytesIO(f.read()))
    for row in book.active.iter_rows():
        for cell in row:
            if cell.value == "bob at example.com":
                cell.value = "bob@example.com"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_the_app_and_worker_policies_in_the_docs_are_enough_and_no_more(
    roles, procs, startup: float, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint, bucket, app_keys, worker_keys, admin = roles
    caplog.set_level(logging.WARNING)
    store = S3Store(
        bucket,
        client=client_as(endpoint, app_keys, _RECORD_CONFIG),
        data_client=client_as(endpoint, app_keys, _DATA_CONFIG),
    )
    service = TaskService(store, LAYOUT)
    app_s3 = client_as(endpoint, app_keys)
    worker_s3 = client_as(endpoint, worker_keys)
    deadline = startup + 10 * LEASE  # its start-up, then a claim, a run and a completion (or a sweep) of tiny files

    # --- the App: tasks made, one cancelled, a recipe saved and removed, an inbox paused and resumed -------
    created = service.create(ANN, "Through its link", "copy")
    copy_id = created.record.task_id
    sent = through_link(created.upload_url, app_keys, "PUT", data=ROWS, headers=dict(created.upload_headers))
    assert sent.status_code == 200, sent.text
    service.submit(ANN, copy_id)
    bell = admin.head_object(Bucket=bucket, Key=LAYOUT.bell_key)["ETag"]  # rung by the submit
    steps_id = service.submit_file(ANN, "Trimmed", "steps", {"steps": TRIM}, ROWS).task_id
    assert LAYOUT.steps_key(steps_id) in keys_under(admin, bucket, LAYOUT.task_prefix(steps_id))
    mails = service.create(ANN, "Mails", "email_enrichment").record.task_id
    service.upload_input(ANN, mails, ROWS)
    service.submit(ANN, mails)
    assert admin.head_object(Bucket=bucket, Key=LAYOUT.bell_key)["ETag"] != bell

    waiting = service.create(ANN, "Never sent", "copy").record.task_id
    upload_id = service.create_multipart(ANN, waiting)  # an upload in parts left open, which the cancel aborts
    assert list(store.list_parts(LAYOUT.input_key(waiting), upload_id)) == []  # what a continued upload asks
    assert service.cancel(ANN, waiting).status == "abandoned"
    assert admin.list_multipart_uploads(Bucket=bucket, Prefix=LAYOUT.task_prefix(waiting)).get("Uploads", []) == []

    # A file refused on the way in: the App may not remove the task made for it, so it is left abandoned.
    with pytest.raises(InvalidInput):
        service.submit_file(ANN, "Empty", "copy", None, b"")
    [empty] = [t for t in service.list(ANN, limit=50).tasks if t.task_name == "Empty"]
    assert empty.status == "abandoned"

    service.recipes.save(ANN, "Short lived", copy_id)
    service.recipes.remove(ANN, "Short lived")
    kept = service.recipes.save(ANN, "CRM weekly", copy_id)
    inbox_id = service.inboxes.id_of(kept)
    service.inboxes.pause(ANN, inbox_id)
    assert service.inboxes.get(ANN, inbox_id).paused
    service.inboxes.resume(ANN, inbox_id)
    # The removed recipe's place keeps its marker (its last version), written with the App's PutObject.
    recipe_key = LAYOUT.recipe_key("ann", "crm-weekly")
    assert sorted(keys_under(admin, bucket, LAYOUT.recipe_root("ann"))) == [
        recipe_key,
        LAYOUT.recipe_key("ann", "short-lived"),
    ]
    gone = admin.get_object(Bucket=bucket, Key=LAYOUT.recipe_key("ann", "short-lived"))["Body"].read()
    assert json.loads(gone)["removed"] is True
    assert keys_under(admin, bucket, f"{PREFIX}/inbox-paused/") == []

    # The App may not remove a record, nor write a worker's output, nor drop a file into an inbox.
    status = LAYOUT.status_key(copy_id)
    assert refused(lambda: app_s3.delete_object(Bucket=bucket, Key=status)) == "AccessDenied"
    for key in (LAYOUT.output_key(copy_id, 1), LAYOUT.workers_root + "w-app", LAYOUT.inbox_prefix(inbox_id) + "a.csv"):
        assert refused(lambda k=key: app_s3.put_object(Bucket=bucket, Key=k, Body=b"x")) == "AccessDenied", key

    # A file another system drops in the recipe's inbox (as the user allowed everything).
    admin.put_object(Bucket=bucket, Key=LAYOUT.inbox_prefix(inbox_id) + "june.csv", Body=ROWS)

    # --- the Worker: every task run, the inbox swept, its presence written ------------------------------
    env = child_env(endpoint=endpoint, **worker_keys, S3TASK_INBOX_INTERVAL=str(INBOX_EVERY))
    worker = procs.worker(
        f"s3://{bucket}/{PREFIX}",
        "--poll-interval", str(POLL), "--lease-seconds", str(LEASE),
        worker_id="w-roles", env=env,
    )  # fmt: skip
    worker.worker_ready(startup)

    admin_store = S3Store(bucket, client=admin, data_client=admin)

    def completed(task_id: str) -> Any:
        """The task's record once completed (read as the user allowed everything); a failure fails the test."""
        record = read_record(admin_store, LAYOUT, task_id)[0]
        assert record.status not in ("failed", "cancelled"), (record.status, record.last_error)
        return record if record.status == "completed" else None

    for task_id in (copy_id, steps_id, mails):
        worker.wait_until(lambda t=task_id: completed(t), deadline, f"task {task_id} completed")
    swept = worker.wait_until(
        lambda: [
            t for t in TaskService(admin_store, LAYOUT).list(ROOT_USER, limit=50).tasks if t.task_name == "june.csv"
        ],
        deadline,
        "the dropped file taken as a task",
    )
    [june] = swept
    assert june.created_by == "ann"
    worker.wait_until(lambda: completed(june.task_id), deadline, "the inbox's task completed")
    assert keys_under(admin, bucket, LAYOUT.inbox_prefix(inbox_id)) == []
    assert keys_under(admin, bucket, f"{PREFIX}/inbox-taken/")
    assert LAYOUT.rows_key(steps_id, 1) in keys_under(admin, bucket, LAYOUT.task_prefix(steps_id))
    compared = service.compares.create(ANN, copy_id, june.task_id, "email").task_id  # a summary beside its output
    worker.wait_until(lambda: completed(compared), deadline, "the comparison completed")
    assert service.compares.summary(ANN, compared) is not None
    worker.wait_until(
        lambda: LAYOUT.worker_key("w-roles") in keys_under(admin, bucket, LAYOUT.workers_root),
        deadline,
        "the worker's presence",
    )
    # The Worker may not write recipes, nor a user's copy of an output, nor pause an inbox.
    for key in (
        LAYOUT.recipe_key("ann", "mine"),
        LAYOUT.export_key(copy_id, 1, "xlsx"),
        LAYOUT.inbox_paused_key(inbox_id),
    ):
        assert refused(lambda k=key: worker_s3.put_object(Bucket=bucket, Key=k, Body=b"x")) == "AccessDenied", key
    assert refused(lambda: worker_s3.delete_object(Bucket=bucket, Key=recipe_key)) == "AccessDenied"

    # --- the App again: downloads, copies, a chart, a view, corrections --------------------------------
    for variant in ("exact", "xlsx", "parquet"):
        service.ensure_output(ANN, copy_id, variant)
    assert service.charts.column_summary(ANN, copy_id, "name").column == "name"
    question = query.Query(search="ada")
    service.prepare_view(ANN, copy_id, question, "csv")
    worker.wait_until(
        lambda: service.view_state(ANN, copy_id, question, "csv").kind == "ready", deadline, "the view's file"
    )
    correction = service.submit_correction(ANN, mails, fixed_errors_book(service, mails))
    assert LAYOUT.corrected_rows_key(correction.task_id) in keys_under(
        admin, bucket, LAYOUT.task_prefix(correction.task_id)
    )
    worker.wait_until(lambda: completed(correction.task_id), deadline, "the correction completed")
    service.ensure_combined(ANN, mails)
    service.ensure_combined(ANN, mails, excel=True)
    made = keys_under(admin, bucket, LAYOUT.task_prefix(copy_id))
    for part in (".exact.csv", ".xlsx", ".parquet", ".chart-", ".view-"):
        assert any(part in k for k in made), (part, made)
    assert any(".combined-" in k for k in keys_under(admin, bucket, LAYOUT.task_prefix(mails)))

    assert worker.stop() == 0, worker.tail()
    assert keys_under(admin, bucket, LAYOUT.inbox_lease_key) == []  # given up as it stopped (a delete)
    got = through_link(service.output_url(ANN, copy_id), app_keys, "GET")  # no worker running: see through_link
    assert got.status_code == 200 and b"bob at example.com" in got.content, got.text
    # A cancel of a running task overwrites its attempt's progress object: the signal its worker stops on.
    live.signal_cancel(store, LAYOUT, completed(copy_id).replace(status=Status.RUNNING), ANN.name)
    assert json.loads(admin.get_object(Bucket=bucket, Key=LAYOUT.progress_key(copy_id, 1))["Body"].read()) == {
        "attempt": 1,
        "cancelled_by": "ann",
    }
    assert "AccessDenied" not in worker.output(), worker.tail(20000)
    denied = [r.getMessage() for r in caplog.records if "AccessDenied" in r.getMessage()]
    assert denied == []
