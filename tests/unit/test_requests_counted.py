"""What a submit asks of the store, request by request (BENCHMARKS.md section 3 lists each and why).

A submit reads nothing it already knows: the file that passed through it (its
first bytes are checked on the way, its ETag comes back with the write), or the
record it just created (the final write is conditional on its ETag). Each
shortcut is a compare-and-set like any other: a change made in between by
someone else (a cancel) fails its condition and wins. A poll reads a task
running elsewhere once. (An attempt's own requests, with a worker's attempt
processes: tests/system/test_requests.py.)

On moto over HTTP (in this process), every request counted at a proxy in front
of it; on the local store, every call.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import boto_client
from s3proxy import RequestLog, counting_proxy
from support import CountingStore, csv_rows

from s3task import lifecycle
from s3task.config import Settings
from s3task.errors import AccessDenied, InvalidInput, InvalidTransition
from s3task.layout import Layout
from s3task.records import read_record, update_record
from s3task.store.base import PutMode, StartReader
from s3task.store.local import LocalStore
from s3task.store.s3 import _DATA_CONFIG, _RECORD_CONFIG, S3Store
from s3task.tasks import Actor, TaskService
from s3task.worker.loop import Worker

ALICE = Actor("alice")
LAYOUT = Layout("batch-tasks")
CSV = csv_rows(50)


@pytest.fixture
def counted(moto_http_bucket: tuple[str, str]) -> Iterator[tuple[TaskService, RequestLog, str]]:
    """A TaskService whose every request passes a counting proxy in front of moto."""
    endpoint, bucket = moto_http_bucket
    with counting_proxy(endpoint) as (proxy, log):
        client, data_client = boto_client(proxy, _RECORD_CONFIG), boto_client(proxy, _DATA_CONFIG)
        store = S3Store(bucket, client=client, data_client=data_client)
        yield TaskService(store, LAYOUT), log, bucket


def asked(log: RequestLog, bucket: str, task_id: str) -> list[str]:
    """The requests logged, as "METHOD what" with the task id and the bucket taken out."""
    out = []
    for _, method, path in log.since(0):
        key = urllib.parse.unquote(path.split("?")[0]).removeprefix(f"/{bucket}/batch-tasks/")
        out.append(f"{method} {key.replace(task_id, '<id>')}")
    return out


def test_submitting_a_file_in_one_call_reads_nothing_back(counted) -> None:
    """The New task page's uploader through the app (the local store), and the CLI's submit."""
    service, log, bucket = counted
    record = service.submit_file(ALICE, "one call", "copy", None, CSV)
    assert asked(log, bucket, record.task_id) == [
        "PUT by-user/alice/<id>",  # create: the "my tasks" index
        "PUT <id>/status.json",  # create: the record
        "PUT <id>/input.csv",  # the file, its first bytes checked on the way through
        "PUT active/<id>",  # the workers' index
        "PUT <id>/status.json",  # queued, on the ETag the create returned
        "PUT active-bell",  # wakes idle workers (shared by all tasks)
    ]
    assert record.status == "queued" and record.input_size_bytes == len(CSV)
    assert record.input_etag == service.store.head(LAYOUT.input_key(record.task_id)).etag  # the pin is right


def test_a_browser_upload_is_submitted_with_one_read(counted) -> None:
    """The New task page: create, the browser's PUT to the presigned URL, then the submit."""
    service, log, bucket = counted
    created = service.create(ALICE, "browser", "copy")
    assert created.upload_url is not None
    requests.put(created.upload_url, data=CSV, headers={"Content-Type": "text/csv"}, timeout=30).raise_for_status()
    record = service.finish_upload(ALICE, created.record.task_id, size=len(CSV))
    assert record.status == "queued" and record.input_size_bytes == len(CSV)
    assert asked(log, bucket, record.task_id) == [
        "PUT by-user/alice/<id>",
        "PUT <id>/status.json",
        "PUT <id>/input.csv",  # the browser, straight to the store
        "GET <id>/input.csv",  # the first 64 KB for the header check, with the size and ETag to pin
        "PUT active/<id>",
        "PUT <id>/status.json",  # on the create's ETag: the page kept what create returned
        "PUT active-bell",
    ]


def test_a_submit_by_another_process_reads_the_record_once(counted) -> None:
    """A task created by one process and submitted by another (the app's page, then the HTTP API
    server, say): the submit reads the record, and queues it on the ETag it read."""
    service, log, bucket = counted
    task_id = service.create(ALICE, "api", "copy").record.task_id
    service.upload_input(ALICE, task_id, CSV)
    start = len(log.since(0))
    other = TaskService(service.store, LAYOUT)
    assert other.submit(ALICE, task_id).status == "queued"
    assert asked(log, bucket, task_id)[start:] == [
        "GET <id>/status.json",
        "GET <id>/input.csv",
        "PUT active/<id>",
        "PUT <id>/status.json",  # on the ETag it read
        "PUT active-bell",
    ]


def test_a_short_browser_upload_is_refused_from_the_same_read(counted) -> None:
    service, _, _ = counted
    created = service.create(ALICE, "short", "copy")
    service.store.put(LAYOUT.input_key(created.record.task_id), CSV[:10], PutMode.OVERWRITE)
    with pytest.raises(InvalidInput, match=f"holds 10 bytes of the file's {len(CSV):,}"):
        service.finish_upload(ALICE, created.record.task_id, size=len(CSV))
    stored, _ = read_record(service.store, LAYOUT, created.record.task_id)
    assert stored.status == "abandoned"  # a failed upload leaves no task waiting for a file


# --- the shortcuts lose to anyone else's write ---------------------------------------


def test_a_cancel_between_create_and_the_browsers_submit_wins(counted) -> None:
    service, _, _ = counted
    created = service.create(ALICE, "cancelled meanwhile", "copy")
    requests.put(created.upload_url, data=CSV, headers={"Content-Type": "text/csv"}, timeout=30).raise_for_status()
    TaskService(service.store, LAYOUT).cancel(ALICE, created.record.task_id)  # in another process
    with pytest.raises(InvalidTransition, match="cannot submit"):
        service.finish_upload(ALICE, created.record.task_id, size=len(CSV))
    stored, _ = read_record(service.store, LAYOUT, created.record.task_id)
    assert stored.status == "abandoned" and stored.attempt_id == 0  # never queued


def test_a_second_finish_leaves_the_queued_task_alone(counted) -> None:
    """A browser that reports its upload twice: the second submit is refused, the task stays queued."""
    service, _, _ = counted
    created = service.create(ALICE, "reported twice", "copy")
    requests.put(created.upload_url, data=CSV, headers={"Content-Type": "text/csv"}, timeout=30).raise_for_status()
    service.finish_upload(ALICE, created.record.task_id, size=len(CSV))
    with pytest.raises(InvalidTransition, match="cannot submit"):
        service.finish_upload(ALICE, created.record.task_id, size=len(CSV))
    assert read_record(service.store, LAYOUT, created.record.task_id)[0].status == "queued"


def test_only_a_record_this_service_created_is_taken_as_it_is(tmp_path: Path) -> None:
    """The remembered record is the service's own: bob cannot submit alice's task through it, and alice's
    submit after that refusal reads the record and queues the task."""
    service = TaskService(LocalStore(tmp_path / "store"), LAYOUT)
    task_id = service.create(ALICE, "alice's", "copy").record.task_id
    service.upload_input(ALICE, task_id, CSV)
    with pytest.raises(AccessDenied):
        service.submit(Actor("bob"), task_id)
    assert service.submit(ALICE, task_id).created_by == "alice"


def test_a_store_without_get_start_still_checks_one_version(tmp_path: Path) -> None:
    """A backend written before get_start (a plugin): the submit HEADs and reads the start on that ETag."""

    class Older:  # only what ObjectStore asks for, by delegation
        def __init__(self, inner: LocalStore) -> None:
            self.inner, self.description = inner, inner.description

        def __getattr__(self, name: str) -> Any:
            if name == "get_start":
                raise AttributeError(name)
            return getattr(self.inner, name)

    store = Older(LocalStore(tmp_path / "store"))
    assert not isinstance(store, StartReader)
    service = TaskService(store, LAYOUT)  # type: ignore[arg-type]
    record = service.submit_file(ALICE, "older store", "copy", None, CSV)
    task_id = service.create(ALICE, "by id", "copy").record.task_id
    service.upload_input(ALICE, task_id, CSV)
    queued = TaskService(store, LAYOUT).submit(ALICE, task_id)  # type: ignore[arg-type]
    for r in (record, queued):
        assert r.status == "queued" and r.input_etag == store.head(LAYOUT.input_key(r.task_id)).etag


def test_a_poll_reads_a_task_running_elsewhere_once(tmp_path: Path) -> None:
    """The poll's lease check starts from the record it just read: no second read when the lease is live."""
    store = CountingStore(tmp_path / "store")
    task_id = TaskService(store, LAYOUT).submit_file(ALICE, "elsewhere", "copy", None, CSV).task_id
    update_record(
        store,
        LAYOUT,
        task_id,
        lambda r, t: lifecycle.claim(r, t, worker_id="other", lease_seconds=60, max_attempts=3)[0],
    )
    settings = Settings(store=str(store.root), worker_id="w2", poll_interval=60, lease_seconds=60)
    worker = Worker(settings, store=store, layout=LAYOUT)
    store.calls.clear()
    assert worker.poll_once() == 0
    assert [kind for kind, key in store.calls if key == f"batch-tasks/{task_id}/status.json"] == ["get"]
