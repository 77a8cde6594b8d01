"""A part sent again with other bytes before the join (issue 36 item 8): the join is refused by the store
(S3's InvalidPart), which ended in the store's raw text ("InvalidPart An error occurred (InvalidPart) when
calling the CompleteMultipartUpload operation…") and a cancelled task. Now the finish says in words which
part changed and that sending the file again continues the upload; the task keeps waiting with its upload
noted, and continuing it (the page's Continue upload, or the CLI's ``submit --resume``) sends that part
again and queues the task with exactly the file's bytes.

On moto over HTTP and on LocalStack, whose joins check each part's ETag as S3 does. (SeaweedFS 4.48 does
not refuse: it joins the part whose ETag was named, the bytes first sent, so there is nothing to say there.)
The parts go as a browser sends them: PUTs to the presigned part URLs the service hands out.
"""

from __future__ import annotations

import hashlib
import io
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import make_store
from support import four_parts

from s3task.errors import UploadInterrupted
from s3task.fingerprint import of_stream
from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks import Actor, TaskService
from s3task.tasks.resumable import PART_SIZE

pytestmark = pytest.mark.slow  # files of four parts, over HTTP

ADA = Actor("ada")
LAYOUT = Layout("batch-tasks")
#: Stores whose join checks each part's ETag (S3's behaviour).
CHECKING = ["moto_http", "localstack"]


def part(n: int, data: bytes | None = None) -> bytes:
    return (four_parts() if data is None else data)[(n - 1) * PART_SIZE : n * PART_SIZE]


def tampered(n: int) -> bytes:
    """Part ``n`` with other bytes, of the same size: what a second window or a replayed URL sends."""
    other = bytearray(part(n))
    other[100:108] = b"XXXXXXXX"
    return bytes(other)


def put(url: str | None, body: bytes) -> str:
    """One part as a browser sends it; the ETag the store answered."""
    assert url is not None
    answer = requests.put(url, data=body, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.headers["ETag"]


def open_upload_ids(store: Any, key: str) -> set[str]:
    """The store's own list of the uploads still open on ``key`` (boto3, no s3task in between)."""
    listed = store.client.list_multipart_uploads(Bucket=store.bucket, Prefix=key).get("Uploads", [])
    return {u["UploadId"] for u in listed if u["Key"] == key}


@pytest.mark.parametrize("kind", CHECKING)
@pytest.mark.parametrize("continued_by", ["page", "cli"])
def test_a_part_sent_again_with_other_bytes_is_said_in_words_and_the_upload_continues(
    kind: str, continued_by: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = make_store(kind, tmp_path, request)
    service = TaskService(store, LAYOUT)
    file = of_stream(io.BytesIO(four_parts()), "data.csv", len(four_parts()))
    plan = service.begin_browser_upload(ADA, "big", "copy", None, None, len(four_parts()), file)
    task_id, upload_id = plan.task_id, plan.upload_id
    assert plan.parts is not None and len(plan.parts) == 4 and upload_id
    sent = [(n, put(url, part(n))) for n, url in enumerate(plan.parts, 1)]
    put(plan.parts[1], tampered(2))  # part 2 again, other bytes: the store keeps these

    with pytest.raises(UploadInterrupted) as stopped:
        service.finish_browser_upload(ADA, plan, sent)
    assert str(stopped.value) == (
        "part 2 of 'data.csv' changed in the task store after it was sent (it was sent again with other "
        f"bytes), so the file was not put together; task {task_id} still waits for it, with the other parts "
        "kept: send the same file again to continue the upload (Continue upload on the task's page), and "
        "part 2 goes again"
    )
    assert "InvalidPart" not in str(stopped.value)
    waiting = read_record(store, LAYOUT, task_id)[0]
    assert waiting.status == "created"  # waiting, not cancelled
    assert waiting.input_upload["upload_id"] == upload_id  # the upload still noted on it ...
    assert open_upload_ids(store, waiting.input_object_path) == {upload_id}  # ... and open in the store

    again = TaskService(store, LAYOUT)  # the page reloaded, or another process: nothing remembered
    if continued_by == "page":
        found = again.unfinished_uploads(ADA)
        assert [r.task_id for r in found] == [task_id]  # offered on the New task page
        plan2 = again.continue_browser_upload(ADA, task_id, file)
        assert plan2.upload_id == upload_id and plan2.parts is not None
        assert [n for n, url in enumerate(plan2.parts, 1) if url] == [2]  # only the changed part goes again
        queued = again.finish_browser_upload(ADA, plan2, [(2, put(plan2.parts[1], part(2)))])
    else:  # s3task submit data.csv --name big --type copy --resume
        found_task = again.waiting_upload(ADA, "big", "copy", file)
        assert found_task is not None and found_task.task_id == task_id
        queued = again.resume_upload(ADA, found_task, io.BytesIO(four_parts()), file)
    assert (queued.task_id, queued.status) == (task_id, "queued")
    stored = store.get(waiting.input_object_path).body
    assert (
        hashlib.sha256(stored).digest() == hashlib.sha256(four_parts()).digest()
    )  # the file's bytes, not the other ones
    assert open_upload_ids(store, waiting.input_object_path) == set()


class AnotherSender:
    """The S3 store, where another sender puts other bytes into part 2 just before the join (a second
    ``--resume`` of the same task, or a browser's old part URL): what the CLI's join then meets."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.sent, self.raced = inner, [], False
        self.lock = threading.Lock()

    def upload_part(self, key: str, upload_id: str, number: int, body: bytes) -> str:
        with self.lock:
            self.sent.append(number)
        return self.inner.upload_part(key, upload_id, number, body)

    def complete_multipart(self, key: str, upload_id: str, parts: list[tuple[int, str]]) -> str:
        if not self.raced:
            self.raced = True
            self.inner.upload_part(key, upload_id, 2, tampered(2))
        return self.inner.complete_multipart(key, upload_id, parts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("kind", CHECKING)
def test_the_cli_says_which_part_changed_and_resume_sends_only_it(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = AnotherSender(make_store(kind, tmp_path, request))
    stream = io.BytesIO(four_parts())
    file = of_stream(stream, "data.csv", len(four_parts()))
    with pytest.raises(UploadInterrupted) as stopped:
        TaskService(store, LAYOUT).submit_resumable(ADA, "raced", "copy", None, stream, file)
    (task_id,) = [i for i in (LAYOUT.task_id_of(k) for k in store.list_prefixes(LAYOUT.root)) if i]
    assert str(stopped.value) == (
        "part 2 of 'data.csv' changed in the task store after it was sent (it was sent again with other "
        f"bytes), so the file was not put together; task {task_id} still waits for it, with the other parts "
        "kept: run the same command with --resume to continue the upload, and part 2 goes again"
    )
    assert read_record(store, LAYOUT, task_id)[0].status == "created"

    before = len(store.sent)
    again = TaskService(store, LAYOUT)
    found = again.waiting_upload(ADA, "raced", "copy", file)
    assert found is not None and found.task_id == task_id
    queued = again.resume_upload(ADA, found, stream, file)
    assert (queued.task_id, queued.status) == (task_id, "queued")
    assert store.sent[before:] == [2]  # only the part that changed
    assert store.get(queued.input_object_path).body == four_parts()
