"""What a refused upload leaves in the store: nothing (issue 36 item 4). A task whose file was declared as
1 KB accepted a much larger PUT on its upload URL; finishing refused it and cancelled the task, but the
file stayed in the bucket until someone noticed. On moto over HTTP, on SeaweedFS (an S3 server no one
here wrote) and on the local store, through the URL a browser is given."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from conftest import make_store

from s3task.errors import InvalidInput, NotFound
from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks import Actor, TaskService
from s3task.web.transfer import signer_for

ADA = Actor("ada")
LAYOUT = Layout("batch-tasks")
BIG = b"id,value\n" + b"1,2\n" * 250_000  # about 1 MB, sent where 1 KB was declared


@pytest.mark.parametrize("kind", ["local", "moto_http", "seaweedfs"])
def test_a_file_larger_than_declared_is_refused_and_removed_with_its_task(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind != "local":
        request.applymarker(pytest.mark.slow)
    store = make_store(kind, tmp_path, request)
    service = TaskService(store, LAYOUT, url_signer=signer_for(store, key="k" * 32))
    plan = service.begin_browser_upload(ADA, "declared small", "copy", None, None, 1_024)
    if kind == "local":  # the app's signed /transfer route: sent as the route would store it
        service.upload_input(ADA, plan.task_id, BIG)
    else:
        assert plan.url is not None and plan.url.startswith("http")
        sent = requests.put(plan.url, data=BIG, headers=dict(plan.headers or {}), timeout=30)
        assert sent.status_code == 200, sent.text
    key = read_record(store, LAYOUT, plan.task_id)[0].input_object_path
    assert store.head(key).size == len(BIG)
    with pytest.raises(InvalidInput, match=f"the store holds {len(BIG):,} bytes of the file's 1,024"):
        service.finish_browser_upload(ADA, plan)
    assert read_record(store, LAYOUT, plan.task_id)[0].status == "abandoned"
    with pytest.raises(NotFound):
        store.head(key)  # what was sent went with the task


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["moto_http", "seaweedfs"])
def test_a_cancel_aborts_every_upload_started_for_the_waiting_task(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Fifty multipart uploads started on one task stayed open after its cancel, until the bucket's one-day
    rule (item 9): each is aborted with the cancel, whoever started it (the service starts at most two on a
    task, tests/contract/test_open_uploads.py; the others as another process would, straight at the store)."""
    store = make_store(kind, tmp_path, request)
    service = TaskService(store, LAYOUT)
    task_id = service.create(ADA, "waiting", "copy").record.task_id
    key = read_record(store, LAYOUT, task_id)[0].input_object_path
    started = [service.create_multipart(ADA, task_id) for _ in range(2)]
    started += [store.create_multipart(key, content_type="text/csv") for _ in range(3)]
    for upload_id in started:
        store.upload_part(key, upload_id, 1, b"id\n1\n")
    open_uploads = store.client.list_multipart_uploads(Bucket=store.bucket, Prefix=key).get("Uploads", [])
    assert {u["UploadId"] for u in open_uploads} == set(started)
    assert service.cancel(ADA, task_id).status == "abandoned"
    assert store.client.list_multipart_uploads(Bucket=store.bucket, Prefix=key).get("Uploads", []) == []


def test_a_cancel_that_may_not_list_uploads_still_deletes_the_file_and_says_so(
    tmp_path: Path, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """On the least-privilege role (no s3:ListBucketMultipartUploads) the listing is refused: the delete
    still goes, and the log says what was left to the bucket's rule (found by the outside review)."""
    from s3task.errors import AccessDenied

    store = make_store("local", tmp_path, request)
    service = TaskService(store, LAYOUT)
    task_id = service.create(ADA, "waiting", "copy").record.task_id
    service.upload_input(ADA, task_id, b"id\n1\n")
    key = read_record(store, LAYOUT, task_id)[0].input_object_path

    def denied(key: str) -> int:
        raise AccessDenied(f"listing the uploads of {key} is not allowed")

    request.getfixturevalue("monkeypatch").setattr(store, "drop_unfinished", denied)
    assert service.cancel(ADA, task_id).status == "abandoned"
    with pytest.raises(NotFound):
        store.head(key)
    assert "aborting the other unfinished uploads" in caplog.text and "is not allowed" in caplog.text
