"""Open uploads in parts are bounded per task and per user (issue 36 item 9): fifty multipart uploads started
on one task stayed open, bounded only by the rate of creates, and each can hold a file's worth of parts until
the bucket's one-day rule. Now a task holds at most two (``MAX_OPEN_UPLOADS_PER_TASK``) and a user at most
``S3TASK_MAX_OPEN_UPLOADS`` (10 by default); one more is refused in words saying what to do, and the store's
own list of open uploads never grows past the bound. A cancel aborts every open upload of the task.

On moto over HTTP and on SeaweedFS (an S3 server no one here wrote): the store's list is read with boto3; on
fake-gcs-server (GCS, whose uploads in parts are objects under the parts root) with google-cloud-storage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import make_store

from s3task.errors import TooManyUploads
from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks import Actor, CreateLimits, TaskService
from s3task.tasks.open_uploads import MAX_OPEN_UPLOADS_PER_TASK
from s3task.tasks.resumable import PARTS_ABOVE

pytestmark = pytest.mark.slow  # over HTTP

ADA, BOB = Actor("ada"), Actor("bob")
LAYOUT = Layout("batch-tasks")
BIG = PARTS_ABOVE + 1  # a file that goes in parts (nothing of it is sent here)
KINDS = ["moto_http", "seaweedfs", "fake_gcs"]


def open_uploads(store: Any, key: str | None = None) -> list[str]:
    """The store's own list of open uploads (of ``key``, else under the prefix): their ids. On GCS an upload is
    its marker object under the parts root (s3task/store/gcs_parts.py), listed with the client itself."""
    if kind_of(store) == "gcs":
        root = f"{store.parts_root}{key or LAYOUT.root}"
        listed = [b.name.rsplit("/", 2) for b in store.client.list_blobs(store.bucket_name, prefix=root)]
        return [nonce for upload, nonce, tail in listed if tail == "upload" and (key is None or upload == root)]
    listed = store.client.list_multipart_uploads(Bucket=store.bucket, Prefix=key or LAYOUT.root).get("Uploads", [])
    return [u["UploadId"] for u in listed if key is None or u["Key"] == key]


def kind_of(store: Any) -> str:
    return "gcs" if hasattr(store, "parts_root") else "s3"


def ids(started: list[str]) -> list[str]:
    """Upload ids as the store lists them (a GCS upload's id also names the file's type: ``<nonce>:<type>``)."""
    return sorted(u.partition(":")[0] for u in started)


@pytest.mark.parametrize("kind", KINDS)
def test_a_task_holds_at_most_two_open_uploads_and_a_cancel_aborts_them(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = make_store(kind, tmp_path, request)
    service = TaskService(store, LAYOUT, limits=CreateLimits())
    task_id = service.create(ADA, "waiting", "copy").record.task_id
    key = read_record(store, LAYOUT, task_id)[0].input_object_path
    started = [service.create_multipart(ADA, task_id) for _ in range(MAX_OPEN_UPLOADS_PER_TASK)]
    for _ in range(3):  # the attack: one more, again and again
        with pytest.raises(TooManyUploads) as refused:
            service.create_multipart(ADA, task_id)
        assert str(refused.value) == (
            f"task {task_id} already has 2 uploads in parts open, the most one task may have: continue its "
            "upload (send the same file again) or cancel the task, which drops what was sent"
        )
    assert sorted(open_uploads(store, key)) == ids(started)  # the refused ones were not left open
    assert read_record(store, LAYOUT, task_id)[0].status == "created"  # the task still waits

    # Uploads left by something else (an older version, another process) go with the cancel too.
    strays = [store.create_multipart(key, content_type="text/csv") for _ in range(3)]
    assert sorted(open_uploads(store, key)) == ids(started + strays)
    assert service.cancel(ADA, task_id).status == "abandoned"
    assert open_uploads(store, key) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_user_holds_at_most_ten_open_uploads_and_another_user_is_not_held_up(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    import io

    from s3task.fingerprint import Fingerprint

    store = make_store(kind, tmp_path, request)
    limits = CreateLimits()
    assert limits.open_uploads == 10  # S3TASK_MAX_OPEN_UPLOADS's default
    service = TaskService(store, LAYOUT, limits=limits)
    plans = [service.begin_browser_upload(ADA, f"big {n}", "copy", None, None, BIG) for n in range(10)]
    assert all(p.upload_id for p in plans) and len(open_uploads(store)) == 10

    words = (
        "you have 10 uploads in parts open, the most allowed (S3TASK_MAX_OPEN_UPLOADS=10): continue one of "
        "them (send the same file again) or cancel its task, which drops what was sent, then try again"
    )
    with pytest.raises(TooManyUploads) as refused:  # the New task page
        service.begin_browser_upload(ADA, "one more", "copy", None, None, BIG)
    assert str(refused.value) == words
    file = Fingerprint("data.csv", BIG, "0" * 64)
    with pytest.raises(TooManyUploads) as refused:  # the CLI's submit of a large file
        service.submit_resumable(ADA, "one more", "copy", None, io.BytesIO(b"id\n1\n"), file)
    assert str(refused.value) == words
    with pytest.raises(TooManyUploads):  # a task of hers that has none yet
        service.create_multipart(ADA, service.create(ADA, "small", "copy").record.task_id)
    assert len(open_uploads(store)) == 10  # none left open by the refusals
    listed = service.list(ADA, mine=True).tasks  # her list: no task was left for a refused upload
    assert sorted(r.task_name for r in listed) == sorted([f"big {n}" for n in range(10)] + ["small"])

    other = service.begin_browser_upload(BOB, "bob's", "copy", None, None, BIG)  # another user is not held up
    assert other.upload_id and len(open_uploads(store)) == 11

    service.cancel(ADA, plans[0].task_id)  # one of hers cancelled: its upload goes, and she has room again
    assert len(open_uploads(store)) == 10
    assert service.begin_browser_upload(ADA, "now it fits", "copy", None, None, BIG).upload_id


def test_a_role_that_may_not_list_uploads_goes_unbounded_and_the_log_says_so(
    tmp_path: Path, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """Without s3:ListBucketMultipartUploads (an App policy from before the bounds) nothing can be counted:
    the upload goes ahead, as it did, and each start says in the log that it went unbounded."""
    from s3task.errors import AccessDeniedByStore

    store = make_store("moto_http", tmp_path, request)

    def denied(prefix: str) -> list[tuple[str, str]]:
        raise AccessDeniedByStore(f"the store refused access to {prefix} (AccessDenied)")

    request.getfixturevalue("monkeypatch").setattr(store, "open_uploads", denied)
    service = TaskService(store, LAYOUT, limits=CreateLimits())
    task_id = service.create(ADA, "waiting", "copy").record.task_id
    started = [service.create_multipart(ADA, task_id) for _ in range(MAX_OPEN_UPLOADS_PER_TASK + 1)]
    assert len(set(started)) == 3
    assert caplog.text.count(f"task {task_id}'s upload goes unbounded") == 3
    assert "(AccessDenied)" in caplog.text
