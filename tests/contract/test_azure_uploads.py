"""Uploads to the Azure backend on Azurite 3.37.0, as a browser and the CLI send them (s3task/store/azure_uploads.py).

- A whole file: one PUT to a SAS URL with the headers the store names; the URL creates the blob and
  cannot replace it, and cannot write any other blob (Azurite checks the signature: 403).
- A large file: blocks PUT to SAS URLs (``comp=block``), listed as parts, committed by the app in
  number order whatever order they came in; a block URL cannot write another blob either.
- Aborting drops the uncommitted blocks; the task service's flow (create, parts, finish) queues a
  task whose input is byte-identical to what was sent; the CLI's resumable upload goes in parts too.
"""

from __future__ import annotations

import io

import pytest
import requests
from sas_urls import aimed_at
from support import PartsDropping, four_parts

from s3task.errors import NotFound, UploadInterrupted
from s3task.fingerprint import of_stream
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.azure import AzureStore
from s3task.store.base import MultipartStore, PutHeaders, PutMode
from s3task.tasks import Actor, TaskService
from s3task.tasks.resumable import PART_SIZE

pytestmark = pytest.mark.slow

ADA = Actor("ada")
KEY = "t/input.csv"
PART = 4 * 2**20  # Azure takes blocks of any size up to 4000 MiB: small ones keep the test quick


@pytest.fixture
def store(azurite) -> AzureStore:
    return azurite.store(azurite.new_bucket())


def _put_blocks(store: AzureStore, upload_id: str, chunks: list[bytes], order: list[int]) -> None:
    urls = [store.presign_part(KEY, upload_id, n, expires=600) for n in range(1, len(chunks) + 1)]
    for index in order:  # the browser sends parts in parallel: any order
        got = requests.put(urls[index], data=chunks[index], timeout=30)  # no headers, as the browser sends a part
        assert got.status_code == 201, got.text
        assert "ETag" not in got.headers  # why the browser reports no tags here


def test_the_store_takes_uploads_in_parts_and_names_its_put_headers(store: AzureStore) -> None:
    assert isinstance(store, MultipartStore) and isinstance(store, PutHeaders)
    assert store.part_etags is False
    assert store.put_headers() == {"x-ms-blob-type": "BlockBlob"}


def test_a_whole_file_url_creates_the_blob_once_and_writes_no_other(store: AzureStore) -> None:
    store.put("t/status.json", b"{}", PutMode.CREATE)
    url = store.presign_put(KEY, expires=600, content_type="text/csv")
    assert url
    headers = {"Content-Type": "text/csv", **store.put_headers()}
    assert requests.put(url, data=b"a,b\n1,2\n", headers=headers, timeout=10).status_code == 201
    assert store.get(KEY).body == b"a,b\n1,2\n" and store.head(KEY).content_type == "text/csv"
    # The create permission only: a second PUT (a late one, after submit) cannot replace the file.
    again = requests.put(url, data=b"a,b\nevil,row\n", headers=headers, timeout=10)
    assert again.status_code == 403
    assert store.get(KEY).body == b"a,b\n1,2\n"
    # Its signature is for this blob alone: aimed at the task's record or another task's input, refused.
    for other in ("t/status.json", "u/input.csv"):
        aimed = requests.put(aimed_at(url, other), data=b"x", headers=headers, timeout=10)
        assert aimed.status_code == 403, other
    assert store.get("t/status.json").body == b"{}"
    with pytest.raises(NotFound):
        store.head("u/input.csv")


def test_blocks_sent_through_their_urls_are_committed_in_number_order(store: AzureStore) -> None:
    chunks = [bytes([65 + i]) * PART for i in range(3)] + [b"tail\n"]
    upload_id = store.create_multipart(KEY, content_type="text/csv")
    _put_blocks(store, upload_id, chunks, order=[2, 0, 3, 1])
    held = store.list_parts(KEY, upload_id)
    assert [(p.number, p.size) for p in held] == [(1, PART), (2, PART), (3, PART), (4, 5)]
    with pytest.raises(NotFound):
        store.head(KEY)  # nothing to read until the app commits
    etag = store.complete_multipart(KEY, upload_id, [(4, ""), (2, ""), (1, ""), (3, "")])  # no tags: blocks by id
    assert store.head(KEY).etag == etag and store.head(KEY).content_type == "text/csv"
    assert store.get(KEY).body == b"".join(chunks)
    with pytest.raises(NotFound):
        store.list_parts(KEY, upload_id)  # completed: the upload is gone


def test_a_block_url_writes_only_its_own_blob(store: AzureStore) -> None:
    upload_id = store.create_multipart(KEY, content_type="text/csv")
    url = store.presign_part(KEY, upload_id, 1, expires=600)
    assert requests.put(aimed_at(url, "t/status.json"), data=b"x", timeout=10).status_code == 403
    assert requests.put(aimed_at(url, "u/input.csv"), data=b"x", timeout=10).status_code == 403
    for key in ("t/status.json", "u/input.csv"):
        with pytest.raises(NotFound):
            store.list_parts(key, upload_id)  # no blob, no blocks
    # What a part's URL can do besides (docs/STORES.md): its write permission also takes a whole Put Blob
    # of its own key, which is why the submit's pinned ETag, not the URL, guards what is processed.
    whole = url.split("&comp=block", 1)[0]
    assert requests.put(whole, data=b"x\n", headers=store.put_headers(), timeout=10).status_code == 201


def test_abort_drops_the_blocks_and_keeps_a_committed_blob(store: AzureStore) -> None:
    upload_id = store.create_multipart(KEY, content_type="text/csv")
    _put_blocks(store, upload_id, [b"a,b\n", b"1,2\n"], order=[0, 1])
    assert len(store.list_parts(KEY, upload_id)) == 2
    store.abort_multipart(KEY, upload_id)
    store.abort_multipart(KEY, upload_id)  # already gone: not an error
    with pytest.raises(NotFound):
        store.list_parts(KEY, upload_id)  # no blob is left, and no block
    with pytest.raises(NotFound):
        store.head(KEY)
    store.put(KEY, b"kept\n", PutMode.CREATE)
    etag = store.head(KEY).etag
    store.abort_multipart(KEY, store.create_multipart(KEY, content_type="text/csv"))
    assert (store.get(KEY).body, store.head(KEY).etag) == (b"kept\n", etag)


def test_the_task_service_queues_a_task_sent_in_blocks_byte_identical(store: AzureStore) -> None:
    service = TaskService(store, Layout("batch-tasks"))
    created = service.create(ADA, "blocks", "copy")
    assert created.upload_url and dict(created.upload_headers) == {"Content-Type": "text/csv", **store.put_headers()}
    task_id = created.record.task_id
    body = b"id,name\n" + b"".join(b"%d,customer %07d\n" % (i, i) for i in range(300_000))
    chunks = [body[i : i + PART] for i in range(0, len(body), PART)]
    assert service.supports_multipart and not service.parts_need_etags and len(chunks) >= 2
    upload_id = service.create_multipart(ADA, task_id)
    urls = service.presign_parts(ADA, task_id, upload_id, range(1, len(chunks) + 1))
    for url, chunk in zip(urls, chunks, strict=True):
        assert requests.put(url, data=chunk, timeout=30).status_code == 201
    parts = [(n, "") for n in range(1, len(chunks) + 1)]  # what the browser reports: no tags
    queued = service.finish_upload(ADA, task_id, size=len(body), upload_id=upload_id, parts=parts)
    assert queued.status == "queued" and queued.input_size_bytes == len(body)
    assert store.get(queued.input_object_path).body == body
    assert queued.input_etag == store.head(queued.input_object_path).etag


def test_the_clis_upload_in_parts_stops_and_a_resume_sends_every_part_again(store: AzureStore) -> None:
    """Azure keeps no checksum of a block, so a resume cannot tell the file's parts from others: it sends
    them all again, into the same task (on S3 only the missing ones go: test_resumable_uploads.py)."""
    data = b"id,value\n" + b"".join(b"%08d,%08d\n" % (i, i) for i in range((2 * PART_SIZE + 100) // 18))
    dropping = PartsDropping(store, allowed=1)
    service = TaskService(dropping, Layout("batch-tasks"))
    stream = io.BytesIO(data)
    file = of_stream(stream, "data.csv", len(data))
    assert service.uploads_in_parts(len(data))
    with pytest.raises(UploadInterrupted, match="stopped with 1 of 3 parts in the store"):
        service.submit_resumable(ADA, "dropped", "copy", None, stream, file)
    dropping.allowed, before = 10, len(dropping.sent)
    again = TaskService(dropping, Layout("batch-tasks"))  # another process: nothing remembered
    found = again.waiting_upload(ADA, "dropped", "copy", file)
    assert found is not None and found.input_upload["upload_id"]
    queued = again.resume_upload(ADA, found, stream, file)
    assert (queued.task_id, queued.status) == (found.task_id, "queued")
    assert sorted(dropping.sent[before:]) == [1, 2, 3]
    assert store.get(queued.input_object_path).body == data


def test_a_client_sending_the_headers_it_was_given_gets_its_task_queued(store: AzureStore) -> None:
    """What an API client does with ``upload.url`` and ``upload.headers`` (web/api.py hands them out as they are)."""
    service = TaskService(store, Layout("batch-tasks"))
    created = service.create(ADA, "whole", "copy")
    assert created.upload_url
    sent = requests.put(created.upload_url, data=b"a,b\n1,2\n", headers=dict(created.upload_headers), timeout=10)
    assert sent.status_code == 201, sent.text
    queued = service.submit(ADA, created.record.task_id)
    assert queued.status == "queued" and store.get(queued.input_object_path).body == b"a,b\n1,2\n"


def test_a_block_the_store_lacks_at_the_commit_is_said_and_sent_again(store: AzureStore) -> None:
    """A block named at the commit that Azure does not hold uncommitted (never arrived, or dropped: Azure drops
    a blob's uncommitted blocks at its next commit, or after a week) makes the commit fail InvalidBlockList.
    It was said as a store error and the task cancelled, its other blocks with it; now the part is named, as
    S3's InvalidPart is, and the task waits with the others for that part alone to go again."""
    data = four_parts()
    chunks = [data[i : i + PART_SIZE] for i in range(0, len(data), PART_SIZE)]
    file = of_stream(io.BytesIO(data), "data.csv", len(data))
    service = TaskService(store, Layout("batch-tasks"))
    plan = service.begin_browser_upload(ADA, "block gone", "copy", None, None, len(data), file)
    assert plan.parts is not None and len(plan.parts) == 4
    for number, (url, chunk) in enumerate(zip(plan.parts, chunks, strict=True), start=1):
        if number != 3:  # the third never arrives, though the page reports every part sent
            assert requests.put(str(url), data=chunk, timeout=30).status_code == 201
    with pytest.raises(UploadInterrupted) as said:
        service.finish_browser_upload(ADA, plan, [(n, "") for n in range(1, 5)])
    assert str(said.value).startswith("part 3 of 'data.csv' was not in the task store at the join"), said.value
    record = read_record(store, Layout("batch-tasks"), plan.task_id)[0]
    assert record.status == "created" and record.input_upload["resend"] == [3]

    again = service.continue_browser_upload(ADA, plan.task_id, file)
    assert again.parts is not None and [url is None for url in again.parts] == [True, True, False, True]
    assert requests.put(str(again.parts[2]), data=chunks[2], timeout=30).status_code == 201
    queued = service.finish_browser_upload(ADA, again, [(3, "")])
    assert queued.status == "queued" and store.get(queued.input_object_path).body == data
