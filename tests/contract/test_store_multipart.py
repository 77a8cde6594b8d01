"""Contract: a multipart upload done by someone else (a browser) through presigned part URLs.

The S3 store starts the upload, presigns one URL per part, and joins the parts
from their ETags, or aborts them. Run against moto in-process, moto's server
over HTTP, SeaweedFS (which checks the part URLs' signatures) and LocalStack;
the parts are sent with plain HTTP PUTs, as a browser sends them.
The local-directory store has no such URLs: its TaskService says so.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from conftest import REAL_STORE_KINDS, make_store

from s3task.errors import AccessDenied, InvalidInput, InvalidTransition, NotFound
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ADA, BOB = Actor("ada"), Actor("bob")
MB = 1 << 20
PART_ONE = b"a,b\n" + b"1,2\n" * (5 * MB // 4)  # a part other than the last must be at least 5 MiB
PART_TWO = b"3,4\n5,6\n"


@pytest.fixture(params=("moto", "moto_http", *(pytest.param(k, marks=pytest.mark.slow) for k in REAL_STORE_KINDS)))
def s3(request: pytest.FixtureRequest, tmp_path: Path):
    return make_store(request.param, tmp_path, request)


def put_part(url: str, body: bytes) -> str:
    resp = requests.put(url, data=body, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.headers["ETag"]


def test_parts_sent_through_presigned_urls_join_into_the_object(s3) -> None:
    key = "batch-tasks/7ZZZZZZZZZZZZZZZZZZZZZZZZZ/input.csv"
    upload_id = s3.create_multipart(key, content_type="text/csv")
    urls = [s3.presign_part(key, upload_id, n, expires=600) for n in (1, 2)]
    etags = [put_part(url, body) for url, body in zip(urls, (PART_ONE, PART_TWO), strict=True)]
    # The parts may be reported in any order (the browser sends them in parallel).
    etag = s3.complete_multipart(key, upload_id, [(2, etags[1]), (1, etags[0])])
    got = s3.get(key)
    assert got.body == PART_ONE + PART_TWO
    assert got.etag == etag and etag.strip('"').endswith("-2")
    assert s3.head(key).content_type == "text/csv"  # fixed when the upload started; parts carry no type


def test_a_part_url_names_one_part_of_one_upload_and_expires(s3) -> None:
    key = "batch-tasks/7ZZZZZZZZZZZZZZZZZZZZZZZZZ/input.csv"
    upload_id = s3.create_multipart(key, content_type="text/csv")
    url = urlparse(s3.presign_part(key, upload_id, 3, expires=1234))
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert url.path.endswith("/" + key)
    assert (query["uploadId"], query["partNumber"]) == (upload_id, "3")
    assert query["X-Amz-Expires"] == "1234" and query["X-Amz-SignedHeaders"] == "host"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256" and query["X-Amz-Signature"]
    for bad in (0, 10_001):
        with pytest.raises(ValueError, match="part numbers"):
            s3.presign_part(key, upload_id, bad, expires=60)


def test_abort_drops_the_parts_and_is_idempotent(s3) -> None:
    key = "batch-tasks/7ZZZZZZZZZZZZZZZZZZZZZZZZZ/input.csv"
    upload_id = s3.create_multipart(key, content_type="text/csv")
    put_part(s3.presign_part(key, upload_id, 1, expires=600), PART_TWO)
    assert [u["UploadId"] for u in s3.client.list_multipart_uploads(Bucket=s3.bucket)["Uploads"]] == [upload_id]
    s3.abort_multipart(key, upload_id)
    s3.abort_multipart(key, upload_id)  # already gone: not an error
    # (Completing it now is NoSuchUpload on S3; moto fails that with a KeyError, so it is not asserted.)
    assert s3.client.list_multipart_uploads(Bucket=s3.bucket).get("Uploads", []) == []
    with pytest.raises(NotFound):
        s3.head(key)


# --- through the TaskService: the same rules as any upload --------------------------------


def test_task_service_multipart_only_before_submit_and_only_for_the_owner(s3) -> None:
    service = TaskService(s3, Layout("batch-tasks"))
    assert service.supports_multipart
    task_id = service.create(ADA, "parts", "copy").record.task_id
    with pytest.raises(AccessDenied):
        service.create_multipart(BOB, task_id)
    upload_id = service.create_multipart(ADA, task_id)
    with pytest.raises(AccessDenied):
        service.presign_parts(BOB, task_id, upload_id, [1])
    urls = service.presign_parts(ADA, task_id, upload_id, [1, 2], expires=777)
    assert [parse_qs(urlparse(u).query)["partNumber"][0] for u in urls] == ["1", "2"]
    assert all(parse_qs(urlparse(u).query)["X-Amz-Expires"] == ["777"] for u in urls)
    etags = [put_part(u, b) for u, b in zip(urls, (PART_ONE, PART_TWO), strict=True)]
    meta = service.complete_multipart(ADA, task_id, upload_id, [(1, etags[0]), (2, etags[1])])
    assert meta.size == len(PART_ONE) + len(PART_TWO)
    queued = service.submit(ADA, task_id)
    assert queued.input_etag == meta.etag and queued.input_size_bytes == meta.size

    # After submit the input is pinned: no new upload, no completing an old one.
    with pytest.raises(InvalidTransition, match="cannot replace the input"):
        service.create_multipart(ADA, task_id)
    late = s3.create_multipart(service.layout.input_key(task_id), content_type="text/csv")
    with pytest.raises(InvalidTransition, match="cannot replace the input"):
        service.complete_multipart(ADA, task_id, late, [(1, etags[0])])
    service.abort_multipart(ADA, task_id, late)  # dropping parts is always allowed to the owner
    with pytest.raises(AccessDenied):
        service.abort_multipart(BOB, task_id, late)
    assert s3.get(service.layout.input_key(task_id)).etag == queued.input_etag


def test_the_local_store_takes_uploads_in_one_piece(tmp_path: Path) -> None:
    service = TaskService(LocalStore(tmp_path / "store"), Layout())
    assert not service.supports_multipart
    task_id = service.create(ADA, "local", "copy").record.task_id
    with pytest.raises(InvalidInput, match="in one piece"):
        service.create_multipart(ADA, task_id)
