"""Upload URLs that bind the file's size (issue 36 item 4): on S3 a browser's upload URL signs
``Content-Length`` with the rest (SigV4's ``X-Amz-SignedHeaders``), the whole file's for one PUT and each
part's own for a part, so a store that checks signatures refuses a body of any other length before storing a
byte. The browser sends the length of what it sends itself: nothing changes on its side.

Proven on SeaweedFS, which checks signatures; moto checks none, so there the oversized body is taken and the
finish refuses and deletes it (tests/contract/test_refused_uploads.py). An Azure SAS binds no length."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from conftest import make_store

from s3task.fingerprint import of_stream
from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks import Actor, TaskService
from s3task.tasks.resumable import PART_SIZE, PARTS_ABOVE

ADA = Actor("ada")
LAYOUT = Layout("batch-tasks")
SMALL = b"id,value\n" + b"1,2\n" * 250  # 1,009 bytes
#: Just over the size that goes in parts: three parts, of 8 MiB, 8 MiB and the rest.
DECLARED = b"id,value\n" + b"%08d,%08d\n" % (1, 1) * ((PARTS_ABOVE + 2**20) // 18)


def signed_headers(url: str) -> list[str]:
    return parse_qs(urlparse(url).query)["X-Amz-SignedHeaders"][0].split(";")


def pieces(data: bytes) -> list[bytes]:
    return [data[i : i + PART_SIZE] for i in range(0, len(data), PART_SIZE)]


def test_a_browsers_upload_urls_sign_the_length_of_what_they_take(tmp_path: Path, request: pytest.FixtureRequest):
    store = make_store("moto", tmp_path, request)
    service = TaskService(store, LAYOUT)
    single = service.begin_browser_upload(ADA, "one piece", "copy", None, None, len(SMALL))
    assert single.url is not None and signed_headers(single.url) == ["content-length", "content-type", "host"]
    assert dict(single.headers or {}) == {"Content-Type": "text/csv"}  # a browser sets no Content-Length itself
    file = of_stream(io.BytesIO(DECLARED), "declared.csv", len(DECLARED))
    parts = service.begin_browser_upload(ADA, "in parts", "copy", None, None, len(DECLARED), file)
    assert parts.parts is not None and len(parts.parts) == 3
    assert all(url is not None and signed_headers(url) == ["content-length", "host"] for url in parts.parts)


@pytest.mark.slow
def test_seaweedfs_refuses_a_body_of_another_length_than_the_url_signs(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """One PUT: a larger and a smaller body are refused (403) with nothing stored; the declared one goes, and
    the task is queued with it."""
    store = make_store("seaweedfs", tmp_path, request)
    service = TaskService(store, LAYOUT)
    plan = service.begin_browser_upload(ADA, "one piece", "copy", None, None, len(SMALL))
    assert plan.url is not None
    key = read_record(store, LAYOUT, plan.task_id)[0].input_object_path
    headers = dict(plan.headers or {})
    for body in (SMALL + b"3,4\n" * 250_000, SMALL[:-4]):
        refused = requests.put(plan.url, data=body, headers=headers, timeout=30)
        assert refused.status_code == 403 and "SignatureDoesNotMatch" in refused.text
        assert key not in store.list_keys(key.rsplit("/", 1)[0] + "/")
    assert requests.put(plan.url, data=SMALL, headers=headers, timeout=30).status_code == 200
    assert service.finish_browser_upload(ADA, plan).status == "queued"


@pytest.mark.slow
def test_seaweedfs_refuses_a_part_larger_than_its_place_and_takes_the_file_as_declared(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The report's case in parts: part 1 sent with a MiB more than its place is refused (403) and not held;
    the parts as declared go, the join gives the file, byte for byte."""
    store = make_store("seaweedfs", tmp_path, request)
    service = TaskService(store, LAYOUT)
    file = of_stream(io.BytesIO(DECLARED), "declared.csv", len(DECLARED))
    plan = service.begin_browser_upload(ADA, "in parts", "copy", None, None, len(DECLARED), file)
    assert plan.upload_id is not None and plan.parts is not None
    key = read_record(store, LAYOUT, plan.task_id)[0].input_object_path
    first = plan.parts[0]
    assert first is not None
    refused = requests.put(first, data=pieces(DECLARED)[0] + b"9,9\n" * (2**20 // 4), timeout=60)
    assert refused.status_code == 403 and "SignatureDoesNotMatch" in refused.text
    assert store.list_parts(key, plan.upload_id) == []
    sent = []
    for number, (url, body) in enumerate(zip(plan.parts, pieces(DECLARED), strict=True), start=1):
        assert url is not None
        put = requests.put(url, data=body, timeout=60)
        assert put.status_code == 200, put.text
        sent.append((number, put.headers["ETag"]))
    assert service.finish_browser_upload(ADA, plan, sent).status == "queued"
    assert hashlib.sha256(store.get(key).body).digest() == hashlib.sha256(DECLARED).digest()


@pytest.mark.slow
def test_a_part_sent_again_larger_through_a_continued_upload_is_refused_too(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Continue upload signs the missing parts' lengths the same way (the last part, shorter, its own)."""
    store = make_store("seaweedfs", tmp_path, request)
    service = TaskService(store, LAYOUT)
    file = of_stream(io.BytesIO(DECLARED), "declared.csv", len(DECLARED))
    first = service.begin_browser_upload(ADA, "in parts", "copy", None, None, len(DECLARED), file)
    assert first.parts is not None and first.parts[0] is not None
    assert requests.put(first.parts[0], data=pieces(DECLARED)[0], timeout=60).status_code == 200
    plan = TaskService(store, LAYOUT).continue_browser_upload(ADA, first.task_id, file)
    assert plan.parts is not None and plan.parts[0] is None
    last = plan.parts[2]
    assert last is not None
    assert requests.put(last, data=pieces(DECLARED)[2] + b"x", timeout=60).status_code == 403
    key = read_record(store, LAYOUT, first.task_id)[0].input_object_path
    assert [p.number for p in store.list_parts(key, str(plan.upload_id))] == [1]  # the refused part is not held


def test_the_local_route_takes_exactly_the_size_its_link_was_made_for(tmp_path: Path) -> None:
    """On a local directory the app's own signed route binds the size too (the token names it): a body of
    another size, said up front or found as it streams (chunked, no Content-Length), is refused in words and
    nothing is published; the declared one goes, and the task is queued with it."""
    from apps.http_server import serve
    from starlette.applications import Starlette

    from s3task.store.local import LocalStore
    from s3task.web.transfer import UrlSigner, transfer_mount

    store = LocalStore(tmp_path / "store")
    signer = UrlSigner(b"k" * 32, clock=store.clock.wall)
    service = TaskService(store, LAYOUT, url_signer=signer)
    plan = service.begin_browser_upload(ADA, "one piece", "copy", None, None, len(SMALL))
    assert plan.url is not None and plan.url.startswith("/transfer/")
    key = read_record(store, LAYOUT, plan.task_id)[0].input_object_path
    app = Starlette(routes=[transfer_mount(store, LAYOUT, signer, max_bytes=2**20)])
    headers = dict(plan.headers or {})
    with serve(app) as base:
        for body in (SMALL + b"3,4\n", iter([SMALL, b"3,4\n"]), iter([SMALL[:-4]])):
            refused = requests.put(base + plan.url, data=body, headers=headers, timeout=30)
            assert (refused.status_code, refused.json()["code"]) == (400, "wrong_size")
            assert (
                refused.json()["message"] == f"this link takes a file of {len(SMALL):,} bytes, the size declared for it"
            )
            assert key not in store.list_keys(key.rsplit("/", 1)[0] + "/")
        assert requests.put(base + plan.url, data=SMALL, headers=headers, timeout=30).status_code == 200
    assert service.finish_browser_upload(ADA, plan).status == "queued"
    assert store.get(key).body == SMALL
