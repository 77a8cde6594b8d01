"""Contract: the parts a store holds of an unfinished multipart upload (ListParts), and parts sent by
the caller itself — what continuing an interrupted upload stands on (s3task.tasks.resumable).

Run on every store kind that takes uploads in parts: moto in-process, moto's server over HTTP,
SeaweedFS and LocalStack (skipped here when not installed). The local directory takes none.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import REAL_STORE_KINDS, make_store

import s3task.store.s3_parts
from s3task.errors import NotFound
from s3task.store.base import MultipartStore, Part
from s3task.store.local import LocalStore

MB = 1 << 20
KEY = "batch-tasks/7ZZZZZZZZZZZZZZZZZZZZZZZZZ/input.csv"
#: Parts other than the last must be at least 5 MiB.
BODIES = [bytes([65 + n]) * (5 * MB) for n in range(3)] + [b"tail\n"]


@pytest.fixture(params=("moto", "moto_http", *(pytest.param(k, marks=pytest.mark.slow) for k in REAL_STORE_KINDS)))
def s3(request: pytest.FixtureRequest, tmp_path: Path):
    return make_store(request.param, tmp_path, request)


def md5(body: bytes) -> str:
    return hashlib.md5(body, usedforsecurity=False).hexdigest()


def test_list_parts_names_each_part_held_with_its_size_and_etag(s3) -> None:
    upload_id = s3.create_multipart(KEY, content_type="text/csv")
    assert s3.list_parts(KEY, upload_id) == []
    # Sent out of order and with a gap, as an interrupted parallel upload leaves them.
    etags = {n: s3.upload_part(KEY, upload_id, n, BODIES[n - 1]) for n in (3, 1)}
    held = s3.list_parts(KEY, upload_id)
    assert [(p.number, p.size) for p in held] == [(1, 5 * MB), (3, 5 * MB)]
    assert {p.number: p.etag for p in held} == etags
    assert all(p.etag.strip('"') == md5(BODIES[p.number - 1]) for p in held)  # a part's ETag is its MD5
    s3.upload_part(KEY, upload_id, 2, BODIES[1])
    s3.upload_part(KEY, upload_id, 4, BODIES[3])
    parts = s3.list_parts(KEY, upload_id)
    s3.complete_multipart(KEY, upload_id, [(p.number, p.etag) for p in parts])
    assert s3.get(KEY).body == b"".join(BODIES)


def test_list_parts_reads_every_page(s3, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(s3task.store.s3_parts, "LIST_PARTS_PAGE", 1)  # one part per ListParts answer
    upload_id = s3.create_multipart(KEY, content_type="text/csv")
    for n in (1, 2, 4):
        s3.upload_part(KEY, upload_id, n, BODIES[n - 1])
    assert [p.number for p in s3.list_parts(KEY, upload_id)] == [1, 2, 4]


def test_a_part_sent_again_replaces_the_one_held(s3, request: pytest.FixtureRequest) -> None:
    upload_id = s3.create_multipart(KEY, content_type="text/csv")
    first = s3.upload_part(KEY, upload_id, 1, BODIES[0])
    again = s3.upload_part(KEY, upload_id, 1, BODIES[1])
    listed = s3.list_parts(KEY, upload_id)
    if "seaweedfs" in request.node.name:
        # SeaweedFS keeps both sends of a part number for a while and lists either (seen both ways here):
        # resuming re-sends a listed part whose MD5 is not the file's, and completes with its own ETags.
        assert len(listed) == 1 and listed[0].etag in (first, again)
    else:
        assert listed == [Part(1, 5 * MB, again)]
    # Whatever is listed, the upload joined with the ETag of the last send holds that send's bytes.
    s3.complete_multipart(KEY, upload_id, [(1, again), (2, s3.upload_part(KEY, upload_id, 2, BODIES[3]))])
    assert s3.get(KEY).body == BODIES[1] + BODIES[3]


def test_an_upload_that_is_gone_is_not_found(s3) -> None:
    upload_id = s3.create_multipart(KEY, content_type="text/csv")
    s3.upload_part(KEY, upload_id, 1, BODIES[3])
    s3.abort_multipart(KEY, upload_id)
    with pytest.raises(NotFound):
        s3.list_parts(KEY, upload_id)
    # (A part sent to it now is NoSuchUpload on S3; moto fails that with a KeyError, so it is not asserted.)


def test_part_numbers_are_checked_before_sending(s3) -> None:
    upload_id = s3.create_multipart(KEY, content_type="text/csv")
    for bad in (0, 10_001):
        with pytest.raises(ValueError, match="part numbers"):
            s3.upload_part(KEY, upload_id, bad, b"x")


def test_the_local_store_takes_no_parts(tmp_path: Path, s3) -> None:
    assert isinstance(s3, MultipartStore)
    assert not isinstance(LocalStore(tmp_path / "store"), MultipartStore)
