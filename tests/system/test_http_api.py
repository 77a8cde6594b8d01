"""The HTTP control API over real HTTP: every endpoint, every error status, access, paging.

Runs the Starlette app with uvicorn on 127.0.0.1 (a real socket), against the
local store (signed /transfer routes) and moto's S3 server (presigned URLs);
plus the docs' curl walkthrough against ``uvicorn --factory`` and the API
mounted in a real ``streamlit run`` process.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import boto3
import pytest
import requests
from apps.http_server import serve
from conftest import free_port
from procs import Procs, child_env, cli, run

from s3task import lifecycle
from s3task.config import Settings
from s3task.errors import StoreUnavailable
from s3task.layout import Layout
from s3task.lifecycle import Lease, Progress
from s3task.records import update_record
from s3task.store.base import ObjectStore, PutMode
from s3task.store.local import LocalStore
from s3task.store.s3 import _RECORD_CONFIG, S3Store
from s3task.tasks import Actor, TaskService
from s3task.web import cli as web_cli
from s3task.web.api import Api, create_app
from s3task.web.openapi import openapi_document
from s3task.web.tokens import TokenTable, hash_token, parse_tokens
from s3task.web.transfer import signer_for

ROOT = Path(__file__).resolve().parents[2]
TOKENS = {"alice-token": Actor("alice"), "bob-token": Actor("bob"), "olga-token": Actor("olga", operator=True)}
CSV = b"name,city\nAda,London\nGrace,Arlington\n"
UNKNOWN_ID = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"


def token_table() -> TokenTable:
    return TokenTable({hash_token(t): a for t, a in TOKENS.items()})


@dataclass
class Api_:
    """A served API plus direct access to its store (to play the worker's part)."""

    base: str
    store: ObjectStore
    layout: Layout
    kind: str

    def call(self, method: str, path: str, token: str | None = "alice-token", **kw: Any) -> requests.Response:
        headers = dict(kw.pop("headers", {}))
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return requests.request(method, self.base + path, headers=headers, timeout=30, **kw)

    def ok(self, method: str, path: str, token: str = "alice-token", status: int = 200, **kw: Any) -> dict:
        r = self.call(method, path, token, **kw)
        assert r.status_code == status, r.text
        return r.json()

    def create(self, token: str = "alice-token", name: str = "t", **kw: Any) -> dict:
        return self.ok("POST", "/api/tasks", token, 201, json={"name": name, "type": "copy", **kw})

    def uploaded(self, token: str = "alice-token", body: bytes = CSV) -> str:
        """A created task with its input uploaded through the returned URL; its id."""
        created = self.create(token)
        r = requests.put(created["upload"]["url"], data=body, headers=created["upload"]["headers"], timeout=30)
        assert r.status_code == 200, r.text
        return created["task"]["task_id"]

    def submitted(self, token: str = "alice-token") -> str:
        task_id = self.uploaded(token)
        self.ok("POST", f"/api/tasks/{task_id}/submit", token)
        return task_id

    # --- the worker's part, straight through the lifecycle functions ---

    def claim(self, task_id: str) -> Lease:
        def change(r, now):
            return lifecycle.claim(r, now, worker_id="test-worker", lease_seconds=60)[0]

        record = update_record(self.store, self.layout, task_id, change)
        return Lease(record.attempt_id, record.lease_token, "test-worker")

    def complete(self, task_id: str, output: bytes = b"name,city,error\nAda,London,\n") -> bytes:
        lease = self.claim(task_id)
        key = self.layout.output_key(task_id, lease.attempt_id)
        self.store.put(key, output, PutMode.CREATE, content_type="text/csv")
        progress = Progress(1, 1, 0, len(CSV))
        update_record(
            self.store,
            self.layout,
            task_id,
            lambda r, now: lifecycle.complete(r, now, lease=lease, output_path=key, progress=progress, row_count=1),
        )
        return output

    def fail(self, task_id: str) -> None:
        lease = self.claim(task_id)
        update_record(
            self.store,
            self.layout,
            task_id,
            lambda r, now: lifecycle.fail(r, now, lease=lease, error="boom", permanent=True),
        )


def settings_for(tmp_path: Path) -> Settings:
    return Settings.load({"store": str(tmp_path / "store"), "url_seconds": 900, "max_upload_mb": 1}, {})


def s3_store(endpoint: str, bucket: str) -> S3Store:
    session = boto3.session.Session(region_name="us-east-1")
    return S3Store(bucket, client=session.client("s3", endpoint_url=endpoint, config=_RECORD_CONFIG))


@pytest.fixture
def local_api(tmp_path: Path) -> Iterator[Api_]:
    store, layout = LocalStore(tmp_path / "store"), Layout()
    service = TaskService(store, layout, url_seconds=900, url_signer=signer_for(store))
    with serve(create_app(settings_for(tmp_path), service=service, tokens=token_table())) as base:
        yield Api_(base, store, layout, "local")


@pytest.fixture
def s3_api(tmp_path: Path, moto_http_bucket: tuple[str, str]) -> Iterator[Api_]:
    endpoint, bucket = moto_http_bucket
    store, layout = s3_store(endpoint, bucket), Layout()
    service = TaskService(store, layout, url_seconds=900)
    with serve(create_app(settings_for(tmp_path), service=service, tokens=token_table())) as base:
        yield Api_(base, store, layout, "s3")


@pytest.fixture(params=["local", "s3"])
def api(request: pytest.FixtureRequest) -> Api_:
    return request.getfixturevalue(f"{request.param}_api")


# --- the full cycle ---------------------------------------------------------------------------


def test_full_cycle_create_upload_submit_poll_download(api: Api_) -> None:
    created = api.call("POST", "/api/tasks", json={"name": "Monthly report", "type": "copy", "parameters": {}})
    assert created.status_code == 201, created.text
    body = created.json()
    task = body["task"]
    task_id = task["task_id"]
    assert created.headers["Location"] == f"/api/tasks/{task_id}"
    assert (task["status"], task["created_by"]) == ("created", "alice")
    assert (task["cancellable"], task["retryable"]) == (True, False)
    assert "lease_token" not in task and "write_id" not in task
    upload = body["upload"]
    assert upload["method"] == "PUT" and upload["headers"] == {"Content-Type": "text/csv"}
    assert upload["expires_in"] == 900

    r = requests.put(upload["url"], data=CSV, headers=upload["headers"], timeout=30)
    assert r.status_code == 200, r.text

    queued = api.ok("POST", f"/api/tasks/{task_id}/submit")["task"]
    assert queued["status"] == "queued" and queued["input_size_bytes"] == len(CSV)
    assert queued["input_etag"] == api.store.head(api.layout.input_key(task_id)).etag
    assert api.ok("GET", f"/api/tasks/{task_id}")["task"]["status"] == "queued"

    output = api.complete(task_id)
    done = api.ok("GET", f"/api/tasks/{task_id}")["task"]
    assert (done["status"], done["terminal"], done["progress"]) == ("completed", True, 1.0)
    assert (done["cancellable"], done["retryable"]) == (False, False)

    out = api.ok("GET", f"/api/tasks/{task_id}/output")
    assert out["filename"] == f"Monthly-report-{task_id[-6:].lower()}.csv"
    assert out["expires_in"] == 900
    got = requests.get(out["url"], timeout=30)
    assert got.status_code == 200
    assert got.content == output
    if api.kind == "local":
        assert got.headers["Content-Disposition"] == f'attachment; filename="{out["filename"]}"'
    else:
        query = parse_qs(urlparse(out["url"]).query)
        assert query["response-content-disposition"] == [f'attachment; filename="{out["filename"]}"']


def test_s3_urls_are_presigned_for_the_exact_key_type_and_lifetime(s3_api: Api_) -> None:
    created = s3_api.create()
    task_id = created["task"]["task_id"]
    url = urlparse(created["upload"]["url"])
    bucket = s3_api.store.bucket  # type: ignore[attr-defined]
    assert url.path == f"/{bucket}/{s3_api.layout.input_key(task_id)}"
    query = parse_qs(url.query)
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert query["X-Amz-Expires"] == ["900"]
    assert query["X-Amz-SignedHeaders"] == ["content-type;host"]  # the browser must send exactly text/csv

    r = requests.put(created["upload"]["url"], data=CSV, headers={"Content-Type": "text/csv"}, timeout=30)
    assert r.status_code == 200
    s3_api.ok("POST", f"/api/tasks/{task_id}/submit")
    s3_api.complete(task_id)
    out = urlparse(s3_api.ok("GET", f"/api/tasks/{task_id}/output")["url"])
    assert out.path == f"/{bucket}/{s3_api.layout.output_key(task_id, 1)}"
    assert parse_qs(out.query)["X-Amz-Expires"] == ["900"]


def test_local_upload_url_points_at_this_servers_transfer_route(local_api: Api_) -> None:
    url = local_api.create()["upload"]["url"]
    assert url.startswith(local_api.base + "/transfer/")


# --- pagination -----------------------------------------------------------------------------------


def test_pages_cover_every_task_newest_first(api: Api_) -> None:
    owners = ["alice-token", "bob-token"] * 3 + ["alice-token"]
    ids = [api.create(token, name=f"task {i}")["task"]["task_id"] for i, token in enumerate(owners)]

    def pages(query: str, token: str = "alice-token") -> list[list[str]]:
        found, cursor = [], None
        while True:
            page = api.ok("GET", f"/api/tasks?{query}" + (f"&cursor={cursor}" if cursor else ""), token)
            found.append([t["task_id"] for t in page["tasks"]])
            cursor = page["next_cursor"]
            if cursor is None:
                return found
            assert len(found) < 10, "paging does not end"

    everything = pages("limit=3")
    assert [len(p) for p in everything] == [3, 3, 1]
    assert [i for p in everything for i in p] == sorted(ids)  # inverted ids: ascending is newest first
    mine = pages("limit=3&mine=true")
    assert [i for p in mine for i in p] == sorted(i for i, t in zip(ids, owners, strict=True) if t == "alice-token")
    assert [len(p) for p in mine] == [3, 1]
    # Others' tasks are listed, but not actionable for this caller.
    listed = api.ok("GET", "/api/tasks?limit=50")["tasks"]
    assert {t["created_by"]: t["cancellable"] for t in listed} == {"alice": True, "bob": False}


# --- access ------------------------------------------------------------------------------------------


def test_a_users_token_cannot_act_on_another_users_task_but_an_operator_can(local_api: Api_) -> None:
    task_id = local_api.uploaded("alice-token")
    seen = local_api.ok("GET", f"/api/tasks/{task_id}", "bob-token")["task"]
    assert (seen["created_by"], seen["cancellable"], seen["retryable"]) == ("alice", False, False)
    for action in ("submit", "cancel", "retry"):
        r = local_api.call("POST", f"/api/tasks/{task_id}/{action}", "bob-token")
        assert r.status_code == 403, (action, r.text)
        assert r.json()["code"] == "access_denied"
        assert "belongs to alice" in r.json()["message"]
    assert local_api.ok("GET", f"/api/tasks/{task_id}")["task"]["status"] == "created"  # nothing happened

    local_api.ok("POST", f"/api/tasks/{task_id}/submit")
    local_api.complete(task_id)
    r = local_api.call("GET", f"/api/tasks/{task_id}/output", "bob-token")
    assert (r.status_code, r.json()["code"]) == (403, "access_denied")
    assert local_api.ok("GET", f"/api/tasks/{task_id}/output", "olga-token")["url"]

    other = local_api.submitted("alice-token")
    as_operator = local_api.ok("GET", f"/api/tasks/{other}", "olga-token")["task"]
    assert as_operator["cancellable"] is True
    cancelled = local_api.ok("POST", f"/api/tasks/{other}/cancel", "olga-token")["task"]
    assert cancelled["status"] == "abandoned"
    assert cancelled["history"][-1]["note"] == "cancelled by olga"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer not-a-known-token"},
        {"Authorization": "Basic YWxpY2U6YWxpY2UtdG9rZW4="},  # alice:alice-token as Basic
        {"Authorization": "alice-token"},
        {"Cookie": "_streamlit_xsrf=x; session=alice", "X-Forwarded-User": "alice", "X-Auth-Request-Email": "alice"},
        {"Remote-User": "olga", "X-Forwarded-Email": "olga@example.com"},
    ],
    ids=["none", "empty", "unknown", "basic", "no-scheme", "cookie-and-proxy", "proxy-operator"],
)
def test_only_bearer_tokens_identify_a_caller(local_api: Api_, headers: dict[str, str]) -> None:
    for method, path in [("GET", "/api/tasks"), ("POST", "/api/tasks"), ("GET", "/api/task-types")]:
        r = requests.request(method, local_api.base + path, headers=headers, json={}, timeout=10)
        assert r.status_code == 401, r.text
        assert r.json()["code"] == "unauthorized"
        assert r.headers["WWW-Authenticate"].startswith("Bearer")


def test_without_a_tokens_file_everything_is_401_and_says_why(tmp_path: Path) -> None:
    app = create_app(settings_for(tmp_path), tokens=TokenTable())
    with serve(app) as base:
        r = requests.get(base + "/api/tasks", headers={"Authorization": "Bearer anything"}, timeout=10)
        assert r.status_code == 401
        r = requests.get(base + "/api/tasks", timeout=10)
        assert r.status_code == 401 and "S3TASK_API_TOKENS_FILE" in r.json()["message"]
        assert requests.get(base + "/api/openapi.json", timeout=10).status_code == 200


# --- retry, cancel and their flags ---------------------------------------------------------------


def test_retry_and_cancel_follow_the_backends_verdicts(local_api: Api_) -> None:
    task_id = local_api.submitted()
    local_api.fail(task_id)
    failed = local_api.ok("GET", f"/api/tasks/{task_id}")["task"]
    assert (failed["status"], failed["final"], failed["retryable"], failed["cancellable"]) == (
        "failed",
        True,
        True,
        False,
    )
    r = local_api.call("POST", f"/api/tasks/{task_id}/cancel")
    assert (r.status_code, r.json()["code"]) == (409, "invalid_transition")

    again = local_api.ok("POST", f"/api/tasks/{task_id}/retry")["task"]
    assert (again["status"], again["retryable"], again["cancellable"]) == ("queued", False, True)
    r = local_api.call("POST", f"/api/tasks/{task_id}/retry")
    assert (r.status_code, r.json()["code"]) == (409, "invalid_transition")
    assert "only failed tasks can be retried" in r.json()["message"]

    gone = local_api.ok("POST", f"/api/tasks/{task_id}/cancel")["task"]
    assert (gone["status"], gone["terminal"], gone["cancellable"]) == ("abandoned", True, False)
    r = local_api.call("POST", f"/api/tasks/{task_id}/cancel")
    assert (r.status_code, r.json()["code"]) == (409, "invalid_transition")


# --- errors --------------------------------------------------------------------------------------------


def test_bad_input_is_400_with_a_stable_code(local_api: Api_) -> None:
    cases = [
        ("GET", "/api/tasks/not-a-task-id", {}, "invalid_task_id"),
        ("POST", "/api/tasks/7zzzzzzzzzzzzzzzzzzzzzzzzz/submit", {}, "invalid_task_id"),
        ("POST", "/api/tasks", {"json": {"name": "x", "type": "no-such-type"}}, "unknown_task_type"),
        ("POST", "/api/tasks", {"json": {"name": "x", "type": "copy", "parameters": {"x": 1}}}, "invalid_input"),
        ("POST", "/api/tasks", {"json": {"name": " ", "type": "copy"}}, "invalid_input"),
        ("POST", "/api/tasks", {"json": {"type": "copy"}}, "invalid_input"),
        ("POST", "/api/tasks", {"json": {"name": "x", "type": "copy", "parameters": [1]}}, "invalid_input"),
        ("POST", "/api/tasks", {"json": {"name": "x", "type": "copy", "prams": {}}}, "invalid_input"),
        ("POST", "/api/tasks", {"json": ["name"]}, "invalid_json"),
        ("POST", "/api/tasks", {"data": b"{not json"}, "invalid_json"),
        ("POST", "/api/tasks", {"data": b"[" * 5000 + b"]" * 5000}, "invalid_json"),  # nested too deeply
        ("POST", "/api/tasks", {"data": b'{"name": "\\ud800", "type": "copy"}'}, "invalid_json"),  # a lone surrogate
        ("GET", "/api/tasks?limit=0", {}, "invalid_input"),
        ("GET", "/api/tasks?limit=ten", {}, "invalid_input"),
        ("GET", "/api/tasks?limit=201", {}, "invalid_input"),
        ("GET", "/api/tasks?cursor=../../x", {}, "invalid_input"),
        ("GET", "/api/tasks?mine=perhaps", {}, "invalid_input"),
    ]
    for method, path, kw, code in cases:
        r = local_api.call(method, path, **kw)
        assert (r.status_code, r.json()["code"]) == (400, code), (method, path, r.text)
        assert r.json()["message"]

    created = local_api.create()["task"]["task_id"]
    r = local_api.call("POST", f"/api/tasks/{created}/submit")  # nothing uploaded yet
    assert (r.status_code, r.json()["code"]) == (400, "invalid_input")
    assert "upload a CSV first" in r.json()["message"]


def test_unknown_tasks_and_routes_are_404_json(local_api: Api_) -> None:
    for method, path in [
        ("GET", f"/api/tasks/{UNKNOWN_ID}"),
        ("POST", f"/api/tasks/{UNKNOWN_ID}/submit"),
        ("POST", f"/api/tasks/{UNKNOWN_ID}/retry"),
        ("POST", f"/api/tasks/{UNKNOWN_ID}/cancel"),
        ("GET", f"/api/tasks/{UNKNOWN_ID}/output"),
    ]:
        r = local_api.call(method, path)
        assert (r.status_code, r.json()["code"]) == (404, "task_not_found"), (method, path)
    r = local_api.call("GET", "/api/nothing-here")
    assert (r.status_code, r.json()["code"]) == (404, "not_found")
    r = local_api.call("DELETE", "/api/tasks")
    assert (r.status_code, r.json()["code"]) == (405, "method_not_allowed")


#: (method, path, status, code): paths no route takes, methods a route does not take, and path
#: parameters with control characters or non-ASCII text, which once fell through to a plain-text 404.
ODD_REQUESTS = [
    ("GET", "/api/nope", 404, "not_found"),
    ("GET", "/api", 404, "not_found"),
    ("GET", "/api/tasks/", 404, "not_found"),  # no redirect (an empty 307): JSON
    ("GET", "/api/tasks%0A", 404, "not_found"),  # not /api/tasks
    ("DELETE", "/api/tasks", 405, "method_not_allowed"),
    ("PUT", f"/api/tasks/{UNKNOWN_ID}", 405, "method_not_allowed"),
    ("GET", "/api/tasks/a%0Ab/submit", 405, "method_not_allowed"),
    ("GET", "/api/tasks/%0A", 400, "invalid_task_id"),
    ("POST", "/api/tasks/a%0Ab/submit", 400, "invalid_task_id"),
    ("POST", "/api/tasks/%0D%0A/cancel", 400, "invalid_task_id"),
    ("GET", "/api/tasks/%00", 400, "invalid_task_id"),
    ("GET", "/api/tasks/%7F/output", 400, "invalid_task_id"),
    ("GET", "/api/tasks/%C3%A9", 400, "invalid_task_id"),
    ("POST", "/api/tasks/%E2%80%A8/retry", 400, "invalid_task_id"),
]


def assert_every_answer_is_json(
    base: str, token: str, requests_: list[tuple[str, str, int, str]] = ODD_REQUESTS
) -> None:
    for method, path, status, code in requests_:
        r = requests.request(
            method, base + path, headers={"Authorization": f"Bearer {token}"}, allow_redirects=False, timeout=10
        )
        assert r.headers.get("content-type") == "application/json", (method, path, r.status_code, r.text[:200])
        assert (r.status_code, r.json()["code"]) == (status, code), (method, path, r.text)
        assert r.json()["message"], (method, path)
        if status == 405:
            assert r.json()["message"].endswith("it takes " + r.headers["Allow"]), r.text
    r = requests.delete(base + "/api/tasks", timeout=10)
    assert r.headers["Allow"] == "GET, HEAD, POST"  # every method of the path, not only the first route's


def test_every_answer_under_api_is_json_with_a_stable_code(local_api: Api_) -> None:
    assert_every_answer_is_json(local_api.base, "alice-token")
    r = local_api.call("GET", "/api/tasks/%0A")
    assert r.json()["message"].startswith("'\\n' is not a valid task id")


def test_submit_reads_the_header_as_the_worker_does(local_api: Api_) -> None:
    """A header the worker would refuse is refused at submit, in the worker's words; rows are the worker's."""
    for body, words in [
        (b"a,a\n1,2\n", "the header row repeats column names: 'a' (columns 1, 2) — give every column"),
        (b'a,"b\n1,2\n', "row 1 (the header row): a quote opened in column 2 is never closed"),
    ]:
        task_id = local_api.uploaded(body=body)
        r = local_api.call("POST", f"/api/tasks/{task_id}/submit")
        assert (r.status_code, r.json()["code"]) == (400, "invalid_input"), r.text
        assert words in r.json()["message"]
        assert local_api.ok("GET", f"/api/tasks/{task_id}")["task"]["status"] == "created"
    # What the worker reads without complaint is queued: a blank line before the header, a line break in a cell;
    # and a bad row is left to the worker, which fails the task naming its line.
    for body in (b'\nid,text\n1,"two\nlines"\n', b"a,b\n1,2\n3,4,5\n"):
        task_id = local_api.uploaded(body=body)
        assert local_api.ok("POST", f"/api/tasks/{task_id}/submit")["task"]["status"] == "queued"


def test_transitions_the_state_does_not_allow_are_409(local_api: Api_) -> None:
    task_id = local_api.submitted()
    for method, path in [("POST", "submit"), ("POST", "retry"), ("GET", "output")]:
        r = local_api.call(method, f"/api/tasks/{task_id}/{path}")
        assert (r.status_code, r.json()["code"]) == (409, "invalid_transition"), path
        assert task_id in r.json()["message"]


def test_oversized_bodies_are_413(local_api: Api_) -> None:
    big = {"name": "x", "type": "copy", "parameters": {"p": "x" * 70_000}}
    r = local_api.call("POST", "/api/tasks", json=big)
    assert (r.status_code, r.json()["code"]) == (413, "payload_too_large")

    def chunked():  # no Content-Length: the limit holds while streaming
        yield b'{"name": "' + b"x" * 40_000
        yield b"x" * 40_000 + b'", "type": "copy"}'

    r = local_api.call("POST", "/api/tasks", data=chunked(), headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["code"]) == (413, "payload_too_large")
    # The local upload route enforces S3TASK_MAX_UPLOAD_MB (1 MB here).
    created = local_api.create()
    r = requests.put(
        created["upload"]["url"], data=b"a\n" + b"1" * (1 << 20), headers={"Content-Type": "text/csv"}, timeout=30
    )
    assert (r.status_code, r.json()["code"]) == (413, "payload_too_large")


class DownStore(LocalStore):
    """A store that stops answering (a network partition, a dead MinIO), or has a bug."""

    down = False
    broken = False

    def get(self, key, *, if_match=None):
        if self.broken:
            raise RuntimeError("secret internal detail")
        if self.down:
            raise StoreUnavailable("connection refused")
        return super().get(key, if_match=if_match)

    def list_prefixes(self, prefix, *, start_after=None, limit=None):
        if self.down:
            raise StoreUnavailable("connection refused")
        return super().list_prefixes(prefix, start_after=start_after, limit=limit)


def test_an_unavailable_store_is_503_and_a_bug_is_a_json_500(tmp_path: Path) -> None:
    store, layout = DownStore(tmp_path / "store"), Layout()
    service = TaskService(store, layout, url_signer=signer_for(store))
    with serve(create_app(settings_for(tmp_path), service=service, tokens=token_table())) as base:
        api = Api_(base, store, layout, "local")
        task_id = api.create()["task"]["task_id"]
        store.down = True
        calls = [("GET", f"/api/tasks/{task_id}"), ("GET", "/api/tasks"), ("POST", f"/api/tasks/{task_id}/cancel")]
        for method, path in calls:
            r = api.call(method, path)
            assert (r.status_code, r.json()["code"]) == (503, "store_unavailable"), path
            assert "connection refused" in r.json()["message"]
        store.down, store.broken = False, True
        r = api.call("GET", f"/api/tasks/{task_id}")  # a bug: still JSON, and no internals leak
        assert (r.status_code, r.json()["code"]) == (500, "internal_error")
        assert "secret" not in r.text


def test_a_missing_bucket_is_503(tmp_path: Path, moto_server: str) -> None:
    store = s3_store(moto_server, "no-such-bucket-here")
    service = TaskService(store, Layout())
    with serve(create_app(settings_for(tmp_path), service=service, tokens=token_table())) as base:
        r = requests.post(
            base + "/api/tasks",
            json={"name": "x", "type": "copy"},
            headers={"Authorization": "Bearer alice-token"},
            timeout=30,
        )
        assert (r.status_code, r.json()["code"]) == (503, "bucket_missing"), r.text


# --- descriptive endpoints -----------------------------------------------------------------------------


def test_task_types_describe_their_parameters(local_api: Api_) -> None:
    types = {t["name"]: t for t in local_api.ok("GET", "/api/task-types")["task_types"]}
    assert types["copy"]["title"] and types["copy"]["description"]
    assert types["copy"]["params"] == []
    fields = {"name", "type", "default", "help", "choices", "required"}
    assert all(set(p) >= fields for t in types.values() for p in t["params"])


def test_openapi_document_describes_exactly_the_served_routes(local_api: Api_) -> None:
    doc = requests.get(local_api.base + "/api/openapi.json", timeout=10).json()
    assert doc == json.loads(json.dumps(openapi_document()))
    assert doc["openapi"].startswith("3.1")
    served: dict[str, set[str]] = {}
    for route in Api(None, TokenTable()).routes():  # type: ignore[arg-type]
        served.setdefault("/api" + route.path, set()).update(m.lower() for m in route.methods - {"HEAD"})
    documented = {path: set(ops) for path, ops in doc["paths"].items()}
    assert documented == served
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert (op["summary"] and "200" in op["responses"]) or "201" in op["responses"], (path, method)
            for response in op["responses"].values():
                for ref in re.findall(r'"\$ref": "#/components/schemas/(\w+)"', json.dumps(response)):
                    assert ref in doc["components"]["schemas"]


# --- token configuration --------------------------------------------------------------------------------


def test_tokens_file_in_json_or_toml_and_reloaded_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    entries = {hash_token("t1"): {"user": "alice"}, hash_token("t2"): {"user": "olga", "role": "operator"}}
    path.write_text(json.dumps(entries))
    table = TokenTable.from_file(str(path))
    assert table.actor_for("t1") == Actor("alice")
    assert table.actor_for("t2") == Actor("olga", operator=True)
    assert table.actor_for("t3") is None

    path.write_text(json.dumps({hash_token("t3"): {"user": "carol", "role": "user"}}))  # t1, t2 revoked
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse-timestamp filesystems
    assert table.actor_for("t1") is None and table.actor_for("t3") == Actor("carol")

    toml = tmp_path / "tokens.toml"
    toml.write_text(f'[{hash_token("t4")}]\nuser = "dave"\nrole = "operator"\n')
    assert TokenTable(path=toml).actor_for("t4") == Actor("dave", operator=True)

    path.write_text("{broken")
    os.utime(path, ns=(2, 2))
    assert table.actor_for("t3") is None  # a broken file accepts no token (fails closed)
    path.write_text(json.dumps({hash_token("t3"): {"user": "carol", "role": "user"}}))
    assert table.actor_for("t3") == Actor("carol")  # fixed: read again
    path.unlink()
    assert table.actor_for("t3") is None  # deleting the file revokes every token


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('{"abc": {"user": "a"}}', "not a SHA-256"),
        (json.dumps({hash_token("x"): {"role": "user"}}), 'needs a "user"'),
        (json.dumps({hash_token("x"): {"user": "a", "role": "admin"}}), "must be one of"),
        (json.dumps({hash_token("x"): {"user": "", "role": "user"}}), "user name"),
        ("[1, 2]", "expected a mapping"),
    ],
)
def test_bad_tokens_files_are_refused_with_a_reason(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_tokens(text, "tokens.json")


@pytest.mark.parametrize(
    "command",
    [["-m", "s3task.http_api", "serve", "--port"], ["-m", "uvicorn", "s3task.http_api:app", "--factory", "--port"]],
    ids=["serve", "uvicorn-factory"],
)
def test_serving_with_a_bad_setting_is_one_line_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    env = _process_env(tmp_path, S3TASK_CONCURRENCY="abc")
    done = run([sys.executable, *command, str(free_port())], env=env, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "S3TASK_CONCURRENCY" in lines[0], done.stderr
    assert not (tmp_path / "store").exists()  # stopped before the store was opened


def test_cli_makes_and_hashes_tokens(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("s3task.http_api", "s3task.web"):  # the old name, kept, and the package's own
        hashed = cli("hash-token", module=module, input="secret-token\n", check=True)
        assert hashed.stdout.strip() == hash_token("secret-token")

    assert web_cli.main(["new-token", "--user", "ops-bot", "--role", "operator"]) == 0
    made = capsys.readouterr().out
    token = re.search(r"token: (\S+)", made).group(1)
    entry = json.loads(made.split("(JSON):", 1)[1])
    assert parse_tokens(json.dumps(entry), "t.json") == {hash_token(token): Actor("ops-bot", operator=True)}
    monkeypatch.setattr(sys, "stdin", io.StringIO(token + "\n"))
    web_cli.main(["hash-token"])
    assert capsys.readouterr().out.strip() in entry


# --- the docs' walkthrough and the Streamlit mount, as real processes -------------------------------------


def walkthrough_script() -> str:
    """The bash block after ``<!-- walkthrough -->`` in docs/API.md, verbatim."""
    text = (ROOT / "docs" / "API.md").read_text()
    match = re.search(r"<!-- walkthrough -->\n```bash\n(.*?)```", text, re.S)
    assert match, "docs/API.md lost its walkthrough block"
    return match.group(1)


def _process_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[{hash_token("walk-token")}]\nuser = "walker"\nrole = "user"\n')
    return child_env(S3TASK_STORE=str(tmp_path / "store"), S3TASK_API_TOKENS_FILE=str(tokens), **extra)


def test_the_docs_curl_walkthrough_runs_against_uvicorn(tmp_path: Path, procs: Procs) -> None:
    missing = [tool for tool in ("curl", "jq", "bash") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the docs/API.md walkthrough needs {', '.join(missing)}; install it to run this test")
    from s3task.worker import EmbeddedWorker, Worker

    port = free_port()
    env = _process_env(tmp_path)
    cmd = [sys.executable, "-m", "uvicorn", "s3task.http_api:app", "--factory"]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    worker_settings = Settings.load({"store": env["S3TASK_STORE"], "poll_interval": 0.2, "worker_id": "walk"}, {})
    with procs.serve(cmd, url=base, health="/api/openapi.json", name="uvicorn", env=env):
        worker = EmbeddedWorker(Worker(worker_settings)).start()
        try:
            work = tmp_path / "work"
            work.mkdir()
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", walkthrough_script()],
                cwd=work,
                env={**env, "S3TASK_URL": base, "S3TASK_TOKEN": "walk-token"},
                capture_output=True,
                text=True,
                timeout=150,
            )
        finally:
            worker.stop()
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "status: completed" in done.stdout
    outputs = list(work.glob("my-first-task-*.csv"))
    assert len(outputs) == 1
    rows = list(csv.reader(io.StringIO(outputs[0].read_text(encoding="utf-8-sig"))))  # the CSV starts with a BOM
    assert rows == [["name", "city"], ["Ada", "London"], ["Grace", "Arlington"]]  # copied unchanged


def test_streamlit_run_serves_the_ui_and_the_api_in_one_process(tmp_path: Path, procs: Procs) -> None:
    script = ROOT / "tests" / "apps" / "streamlit_api_app.py"
    with procs.streamlit(script, env=_process_env(tmp_path)) as app:
        base = app.url
        assert requests.get(base + "/_stcore/health", timeout=10).text == "ok"
        assert "<html" in requests.get(base + "/", timeout=10).text.lower()  # the UI is still there
        auth = {"Authorization": "Bearer walk-token"}
        assert requests.get(base + "/api/tasks", timeout=10).status_code == 401
        r = requests.post(base + "/api/tasks", json={"name": "via streamlit", "type": "copy"}, headers=auth, timeout=10)
        assert r.status_code == 201, r.text
        upload = r.json()["upload"]
        assert upload["url"].startswith(base + "/transfer/")
        put = requests.put(upload["url"], data=CSV, headers=upload["headers"], timeout=10)
        assert put.status_code == 200, put.text
        task_id = r.json()["task"]["task_id"]
        queued = requests.post(f"{base}/api/tasks/{task_id}/submit", headers=auth, timeout=10)
        assert queued.status_code == 200 and queued.json()["task"]["status"] == "queued"
        listed = requests.get(base + "/api/tasks?mine=true", headers=auth, timeout=10).json()
        assert [t["task_id"] for t in listed["tasks"]] == [task_id]
        # Streamlit's own 404 (or its page) never answers under /api. Its PathSecurityMiddleware, which runs
        # before any route, does answer a NUL byte in the path (a plain-text 400), so that case is left out.
        assert_every_answer_is_json(base, "walk-token", [r for r in ODD_REQUESTS if "%00" not in r[1]])


@pytest.mark.parametrize(
    ("variable", "value"),
    [("S3TASK_CONCURRENCY", "0"), ("S3TASK_API_TOKENS_FILE", "/nonexistent/tokens.json")],
)
def test_inside_the_app_a_broken_configuration_answers_json_not_the_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    """The app's /api and /transfer say why they cannot work (503 not_configured) instead of
    falling through to Streamlit's HTML page with a 200."""
    import sys

    from starlette.applications import Starlette

    sys.path.insert(0, str(ROOT))
    from ui import server

    monkeypatch.setenv("S3TASK_STORE", str(tmp_path / "store"))
    monkeypatch.setenv(variable, value)
    with serve(Starlette(routes=server.routes())) as base:
        for method, path in [("GET", "/api/tasks"), ("GET", "/api/"), ("POST", "/api/tasks"), ("PUT", "/transfer/x")]:
            resp = requests.request(method, base + path, timeout=10)
            assert resp.status_code == 503, (path, resp.text)
            body = resp.json()
            assert body["code"] == "not_configured" and variable in body["message"], body
