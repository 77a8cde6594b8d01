"""One contract suite, every backend: local directory, moto in-process, moto over HTTP, S3 servers, Azurite and
fake-gcs-server.

Each test takes the ``store`` fixture and so runs once per store kind — here
conftest's three, plus ``local-noxattr``: the local directory as it runs on
macOS, whose ``os`` module has no ``getxattr``/``setxattr``. What
is asserted is what a caller of the store relies on: put modes, conditional
reads and deletes, listings with ``start_after`` and ``limit``, streaming,
key validation, the clock, the CAS probe, and races that must count exactly.

fake-gcs-server does not check two preconditions GCS checks (docs/STORES.md): those two checks are
skipped there, saying so (:func:`emulator_gap`); tests/contract/test_gcs_quirks.py asserts the gaps, so a
release that closes one shows.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from conftest import STORE_KINDS, make_store
from procs import Proc, child_env

import s3task.store.azure
import s3task.store.gcs
import s3task.store.s3
from s3task.clock import Clock
from s3task.errors import (
    AccessDeniedByStore,
    AlreadyExists,
    BucketMissing,
    Conflict,
    InvalidKey,
    NotFound,
    PreconditionFailed,
    StoreUnavailable,
    UnsafeStore,
)
from s3task.store.azure import AzureStore
from s3task.store.base import ObjectStore, PutMode
from s3task.store.gcs import GcsStore
from s3task.store.local import LocalStore
from s3task.store.probe import cas_probe
from s3task.store.s3 import S3Store

MIB = 1024 * 1024


@pytest.fixture(params=(*STORE_KINDS, "local-noxattr", "memory"))
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Each test using this runs once per store kind: conftest's, the local store without xattr functions,
    and s3task.testing's in-memory store (what plug-in authors test against)."""
    if request.param == "memory":
        from s3task.testing import MemoryStore

        return MemoryStore()
    if request.param == "local-noxattr":
        # As on macOS (and the BSDs): Python's os module has these on Linux only.
        monkeypatch.delattr(os, "getxattr", raising=False)
        monkeypatch.delattr(os, "setxattr", raising=False)
        return make_store("local", tmp_path, request)
    return make_store(request.param, tmp_path, request)


def keeps_metadata(store: ObjectStore) -> bool:
    """Whether objects keep user metadata and a content type: not on a local store without xattrs."""
    return not isinstance(store, LocalStore) or hasattr(os, "setxattr")


def md5_etag(data: bytes) -> str:
    return f'"{hashlib.md5(data).hexdigest()}"'


def etags_are_md5(store: ObjectStore) -> bool:
    """Whether a single put's ETag is the MD5 of its bytes: on S3 and the local store; Azure's are opaque
    (``"0x8DC…"``) and new on every write, even of the same bytes; GCS's is the object's generation."""
    return not isinstance(store, AzureStore | GcsStore)


def emulator_gap(request: pytest.FixtureRequest, what: str) -> None:
    """Skip, saying so, a check the store's emulator cannot make (GCS makes it; docs/STORES.md)."""
    if request.node.callspec.params.get("store") == "fake_gcs":
        pytest.skip(f"fake-gcs-server {what}; GCS checks it (docs/STORES.md, tests/contract/test_gcs_quirks.py)")


# --- put modes --------------------------------------------------------------------


def test_overwrite_creates_and_replaces(store: ObjectStore) -> None:
    first = store.put("t/a", b"one", PutMode.OVERWRITE)
    second = store.put("t/a", b"two", PutMode.OVERWRITE)
    assert first != second == store.head("t/a").etag
    if etags_are_md5(store):
        assert (first, second) == (md5_etag(b"one"), md5_etag(b"two"))
    assert store.get("t/a").body == b"two"


def test_create_refuses_an_existing_key(store: ObjectStore) -> None:
    store.put("t/a", b"one", PutMode.CREATE)
    with pytest.raises(AlreadyExists):
        store.put("t/a", b"two", PutMode.CREATE)
    assert store.get("t/a").body == b"one"


def test_update_with_the_right_etag_succeeds(store: ObjectStore) -> None:
    etag = store.put("t/a", b"one", PutMode.CREATE)
    new = store.put("t/a", b"two", PutMode.update(etag))
    assert new != etag
    if etags_are_md5(store):
        assert new == md5_etag(b"two")
    assert store.get("t/a").body == b"two"


def test_update_with_a_stale_etag_fails_and_changes_nothing(store: ObjectStore) -> None:
    stale = store.put("t/a", b"one", PutMode.CREATE)
    store.put("t/a", b"two", PutMode.update(stale))
    with pytest.raises(PreconditionFailed):
        store.put("t/a", b"three", PutMode.update(stale))
    assert store.get("t/a").body == b"two"


def test_update_of_a_missing_key_fails(store: ObjectStore) -> None:
    with pytest.raises(PreconditionFailed):
        store.put("t/missing", b"x", PutMode.update(md5_etag(b"x")))
    with pytest.raises(NotFound):
        store.head("t/missing")


def test_update_without_an_etag_is_an_error_never_an_overwrite() -> None:
    with pytest.raises(ValueError):
        PutMode.update("")
    with pytest.raises(ValueError):
        PutMode("update")
    with pytest.raises(ValueError):
        PutMode("create", '"abc"')
    with pytest.raises(ValueError):
        PutMode("upsert")


# --- reads --------------------------------------------------------------------------


def test_get_and_head_report_size_etag_metadata_and_content_type(store: ObjectStore) -> None:
    body = b"id,name\n1,ada\n"
    etag = store.put(
        "t/in.csv", body, PutMode.CREATE, content_type="text/csv", metadata={"write-id": "w1", "by": "ada"}
    )
    got = store.get("t/in.csv")
    head = store.head("t/in.csv")
    assert got.body == body
    for meta in (got.meta, head):
        assert meta.key == "t/in.csv"
        assert meta.size == len(body)
        assert meta.etag == etag
        if etags_are_md5(store):
            assert meta.etag == md5_etag(body)
        if keeps_metadata(store):
            assert meta.metadata == {"write-id": "w1", "by": "ada"}
            assert meta.content_type == "text/csv"
        else:
            assert (meta.metadata, meta.content_type) == ({}, None)
        assert meta.last_modified is not None
        assert abs((meta.last_modified - datetime.now(UTC)).total_seconds()) < 60


def test_empty_object(store: ObjectStore) -> None:
    store.put("t/marker", b"", PutMode.OVERWRITE)
    assert store.get("t/marker").body == b""
    assert store.head("t/marker").size == 0


def test_missing_key_is_not_found(store: ObjectStore) -> None:
    with pytest.raises(NotFound):
        store.get("t/nope")
    with pytest.raises(NotFound):
        store.head("t/nope")
    with pytest.raises(NotFound), store.open_read("t/nope"):
        pass


def test_get_if_match(store: ObjectStore) -> None:
    etag = store.put("t/a", b"one", PutMode.CREATE)
    assert store.get("t/a", if_match=etag).body == b"one"
    store.put("t/a", b"two", PutMode.OVERWRITE)
    with pytest.raises(PreconditionFailed):
        store.get("t/a", if_match=etag)
    with pytest.raises(PreconditionFailed), store.open_read("t/a", if_match=etag):
        pass


@pytest.mark.parametrize("body", [b"", b"a", b"0123456789", b"0123456789" * 3], ids=["empty", "1", "10", "30"])
def test_get_start_gives_the_first_bytes_with_the_whole_objects_size_and_etag(store: ObjectStore, body) -> None:
    """What a submit checks: the header's bytes, and the size and ETag that the record pins."""
    etag = store.put("t/start", body, PutMode.OVERWRITE)
    got = store.get_start("t/start", 10)
    assert got.body == body[:10]
    assert (got.meta.size, got.meta.etag) == (len(body), etag)
    with pytest.raises(NotFound):
        store.get_start("t/nope", 10)


# --- delete -------------------------------------------------------------------------


def test_delete(store: ObjectStore) -> None:
    store.put("t/a", b"one", PutMode.CREATE)
    store.delete("t/a")
    with pytest.raises(NotFound):
        store.get("t/a")
    store.delete("t/a")  # deleting a missing key is fine
    store.delete("t/never-existed")


def test_conditional_delete(store: ObjectStore) -> None:
    etag = store.put("t/a", b"one", PutMode.CREATE)
    with pytest.raises(PreconditionFailed):
        store.delete("t/a", if_match=md5_etag(b"other"))
    assert store.get("t/a").body == b"one"
    store.delete("t/a", if_match=etag)
    with pytest.raises(NotFound):
        store.head("t/a")


def test_conditional_delete_with_a_stale_etag(store: ObjectStore, request: pytest.FixtureRequest) -> None:
    """An ETag the key really had, before its last write: the store itself must refuse the delete."""
    stale = store.put("t/a", b"one", PutMode.CREATE)
    store.put("t/a", b"two", PutMode.update(stale))
    emulator_gap(request, "ignores ifGenerationMatch on a delete")
    with pytest.raises(PreconditionFailed):
        store.delete("t/a", if_match=stale)
    assert store.get("t/a").body == b"two"


def test_create_after_delete(store: ObjectStore) -> None:
    store.put("t/a/b", b"one", PutMode.CREATE)
    store.delete("t/a/b")
    store.put("t/a/b", b"two", PutMode.CREATE)
    assert store.get("t/a/b").body == b"two"


# --- listing ------------------------------------------------------------------------


def _fill(store: ObjectStore, keys: list[str], threads: int = 16) -> None:
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda k: store.put(k, b"", PutMode.OVERWRITE), keys))


def test_list_keys_start_after_and_limit(store: ObjectStore) -> None:
    keys = [f"p/{c}" for c in "edcba"] + ["p/sub/x", "p/sub/y", "other/z", "pz"]
    _fill(store, keys)
    assert store.list_keys("p/") == ["p/a", "p/b", "p/c", "p/d", "p/e", "p/sub/x", "p/sub/y"]
    assert store.list_keys("p/", limit=2) == ["p/a", "p/b"]
    assert store.list_keys("p/", start_after="p/b", limit=2) == ["p/c", "p/d"]
    assert store.list_keys("p/", start_after="p/e") == ["p/sub/x", "p/sub/y"]
    assert store.list_keys("p/", start_after="p/sub/y") == []
    assert store.list_keys("p/sub/") == ["p/sub/x", "p/sub/y"]
    assert store.list_keys("nothing/") == []


def test_list_prefixes_start_after_and_limit(store: ObjectStore, request: pytest.FixtureRequest) -> None:
    keys = ["r/c/1", "r/a/1", "r/a/2", "r/b/x/1", "r/d/1", "r/top", "s/e/1"]
    _fill(store, keys)
    assert store.list_prefixes("r/") == ["r/a/", "r/b/", "r/c/", "r/d/"]
    assert store.list_prefixes("r/", limit=2) == ["r/a/", "r/b/"]
    assert store.list_prefixes("r/", start_after="r/b0", limit=2) == ["r/c/", "r/d/"]
    assert store.list_prefixes("r/b/") == ["r/b/x/"]
    assert store.list_prefixes("nothing/") == []
    store.delete("r/b/x/1")  # no directories in an object store: an emptied prefix is gone
    if request.node.callspec.params["store"] == "seaweedfs":
        # except on SeaweedFS, whose filer keeps the emptied folder (docs/STORES.md): s3task never
        # relies on a prefix vanishing (records are never deleted; only markers and probe keys are).
        assert store.list_prefixes("r/") == ["r/a/", "r/b/", "r/c/", "r/d/"]
        return
    assert store.list_prefixes("r/") == ["r/a/", "r/c/", "r/d/"]


def test_listings_paginate_past_1000(store: ObjectStore) -> None:
    """S3 answers at most 1,000 entries per request: listings must follow continuation tokens."""
    keys = [f"many/{i:05d}/x" for i in range(1100)]
    prefixes = [k.removesuffix("x") for k in keys]
    _fill(store, keys)
    assert store.list_keys("many/") == keys
    assert store.list_keys("many/", limit=1050) == keys[:1050]
    assert store.list_keys("many/", start_after=keys[99], limit=1001) == keys[100:1100]
    assert store.list_prefixes("many/") == prefixes
    assert store.list_prefixes("many/", start_after="many/00009/", limit=1020) == prefixes[10:1030]


# --- streaming ----------------------------------------------------------------------


def test_open_write_and_open_read_stream(store: ObjectStore) -> None:
    with store.open_write("t/out.csv", PutMode.CREATE, content_type="text/csv", metadata={"write-id": "w"}) as w:
        for i in range(100):
            w.write(f"{i},row\n".encode())
    expected = b"".join(f"{i},row\n".encode() for i in range(100))
    if etags_are_md5(store):
        assert w.etag == md5_etag(expected)
    meta = store.head("t/out.csv")
    kept = ({"write-id": "w"}, "text/csv") if keeps_metadata(store) else ({}, None)
    assert (meta.size, meta.etag, meta.metadata, meta.content_type) == (len(expected), w.etag, *kept)
    with store.open_read("t/out.csv", if_match=meta.etag) as f:
        parts = []
        while chunk := f.read(37):
            parts.append(chunk)
    assert b"".join(parts) == expected


def _concat(block: bytes, total: int) -> bytes:
    return (block * (total // len(block) + 1))[:total]


def test_local_etags_are_content_hashes_that_survive_losing_the_xattr(tmp_path: Path) -> None:
    """Small objects: MD5, as S3's single PUT; big ones: multipart-style. Recomputed alike without xattrs."""
    store = LocalStore(tmp_path)
    small, big = b"a,b\n1,2\n", bytes(range(256)) * (40 * 1024 + 7)  # 10 MiB and a bit: two parts
    assert store.put("t/small", small, PutMode.CREATE) == md5_etag(small)
    with store.open_write("t/big", PutMode.CREATE) as w:
        for i in range(0, len(big), 1_000_003):
            w.write(memoryview(big)[i : i + 1_000_003])
    assert w.etag == f'"{hashlib.sha1(big).hexdigest()[:32]}-2"' == store.head("t/big").etag
    assert store.put("t/big2", big, PutMode.CREATE) == w.etag  # same bytes, however written: same ETag
    assert store.put("t/big3", big[:-1] + b"!", PutMode.CREATE) != w.etag
    for key in ("t/small", "t/big"):
        before = store.head(key).etag
        os.removexattr(tmp_path / key, "user.s3task")
        assert store.head(key).etag == before


@pytest.mark.parametrize("extra", [-1, 0, 1, 3 * MIB])
def test_local_etag_at_the_multipart_boundary(tmp_path: Path, extra: int) -> None:
    """Up to 8 MiB the MD5, past it the SHA-1 form, however the writes fall around the boundary."""
    store = LocalStore(tmp_path)
    data = bytes(range(256)) * ((8 * MIB + extra) // 256) + b"x" * ((8 * MIB + extra) % 256)
    with store.open_write("t/edge", PutMode.CREATE) as w:
        for i in range(0, len(data), 3 * MIB + 17):  # one write straddles 8 MiB
            w.write(memoryview(data)[i : i + 3 * MIB + 17])
    if len(data) <= 8 * MIB:
        expected = md5_etag(data)
    else:
        expected = f'"{hashlib.sha1(data).hexdigest()[:32]}-{-(-len(data) // (8 * MIB))}"'
    assert w.etag == expected == store.head("t/edge").etag
    os.removexattr(tmp_path / "t/edge", "user.s3task")
    assert store.head("t/edge").etag == expected  # recomputed from the content: the same


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> int:
    """S3 parts may be 5 MiB at least (except the last); use that instead of 8 MiB to stay quick."""
    monkeypatch.setattr(s3task.store.s3, "PART_SIZE", 5 * MIB)
    monkeypatch.setattr(s3task.store.azure, "BLOCK_SIZE", 5 * MIB)  # Azure has no minimum: the same, for one test
    monkeypatch.setattr(s3task.store.gcs, "CHUNK_SIZE", 5 * MIB)  # a multiple of 256 KiB, as GCS's must be
    return 5 * MIB


def test_multipart_sized_object_round_trips(store: ObjectStore, small_parts: int) -> None:
    block = bytes(range(256)) * 4096  # 1 MiB
    total = 2 * small_parts + 123_456
    digest = hashlib.md5()
    with store.open_write("t/big.csv", PutMode.CREATE) as w:
        written = 0
        while written < total:
            piece = block[: min(len(block), total - written)]
            w.write(piece)
            digest.update(piece)
            written += len(piece)
    meta = store.head("t/big.csv")
    assert meta.size == total
    assert w.etag == meta.etag
    # Like any S3 multipart upload, the ETag is not the MD5 of the content but "<32 hex>-<parts>".
    assert meta.etag != f'"{digest.hexdigest()}"'
    if isinstance(store, S3Store):
        assert meta.etag.endswith('-3"')  # really a multipart upload: three parts
    elif isinstance(store, AzureStore):  # really a block blob of three staged blocks
        assert len(store.client.get_blob_client("t/big.csv").get_block_list("committed")[0]) == 3
    elif isinstance(store, GcsStore):  # a resumable upload: its generation, whose answer named it
        assert meta.etag.isdigit()
    else:  # the local store: SHA-1 of the content and the number of 8 MiB parts
        assert meta.etag == f'"{hashlib.sha1(_concat(block, total)).hexdigest()[:32]}-2"'
    check = hashlib.md5()
    with store.open_read("t/big.csv") as f:
        while chunk := f.read(MIB):
            check.update(chunk)
    assert check.hexdigest() == digest.hexdigest()


@pytest.mark.parametrize("size", ["small", "multipart"])
def test_open_write_create_refuses_an_existing_key(
    store: ObjectStore, small_parts: int, size: str, request: pytest.FixtureRequest
) -> None:
    if size == "multipart":
        emulator_gap(request, "ignores ifGenerationMatch on a resumable upload")
    store.put("t/out.csv", b"first", PutMode.CREATE)
    data = b"x" * (small_parts + 10 if size == "multipart" else 10)
    with pytest.raises(AlreadyExists), store.open_write("t/out.csv", PutMode.CREATE) as w:
        w.write(data)
    assert store.get("t/out.csv").body == b"first"
    _assert_no_pending_uploads(store)


@pytest.mark.parametrize("size", ["small", "multipart"])
def test_open_write_leaves_nothing_when_the_block_raises(store: ObjectStore, small_parts: int, size: str) -> None:
    data = b"x" * (small_parts + 10 if size == "multipart" else 10)
    with pytest.raises(RuntimeError, match="handler crashed"), store.open_write("t/out.csv", PutMode.CREATE) as w:
        w.write(data)
        raise RuntimeError("handler crashed")
    with pytest.raises(NotFound):
        store.head("t/out.csv")
    assert store.list_keys("t/") == []
    _assert_no_pending_uploads(store)


@pytest.mark.parametrize("store", ["moto"], indirect=True)
@pytest.mark.parametrize("failing_part", [1, 2])
def test_a_failed_part_aborts_the_multipart_upload(store: S3Store, small_parts: int, failing_part: int) -> None:
    """Part 2 is the last one, sent when the block exits: it must not leave an invisible, billed upload."""
    real = store.data_client
    calls = {"n": 0}

    class FailingParts:
        def upload_part(self, **kwargs):
            calls["n"] += 1
            if calls["n"] == failing_part:
                raise ClientError(
                    {"Error": {"Code": "InternalError"}, "ResponseMetadata": {"HTTPStatusCode": 500}}, "UploadPart"
                )
            return real.upload_part(**kwargs)

        def __getattr__(self, name):
            return getattr(real, name)

    store.data_client = FailingParts()
    with pytest.raises(StoreUnavailable), store.open_write("t/big.csv", PutMode.CREATE) as w:
        w.write(b"x" * (small_parts + 10))
    assert calls["n"] == failing_part
    with pytest.raises(NotFound):
        store.head("t/big.csv")
    _assert_no_pending_uploads(store)


def _assert_no_pending_uploads(store: ObjectStore) -> None:
    if isinstance(store, S3Store):
        assert not store.client.list_multipart_uploads(Bucket=store.bucket).get("Uploads")
    elif isinstance(store, LocalStore):
        assert list((store.root / ".s3task-meta" / "tmp").iterdir()) == []


# --- S3 quirks, normalised at the boundary -------------------------------------------------


def stubbed_s3() -> tuple[S3Store, Stubber]:
    from conftest import boto_client

    client = boto_client(None, s3task.store.s3._RECORD_CONFIG)
    stubber = Stubber(client)
    stubber.activate()
    return S3Store("bucket", client=client, data_client=client), stubber


def test_s3_409_on_a_create_is_resent() -> None:
    """Nothing of ours landed and If-None-Match still guards the key: the same request may go again."""
    store, stub = stubbed_s3()
    stub.add_client_error("put_object", "ConditionalRequestConflict", http_status_code=409)
    stub.add_response(
        "put_object", {"ETag": '"abc"'}, {"Bucket": "bucket", "Key": "k", "Body": b"x", "IfNoneMatch": "*"}
    )
    assert store.put("k", b"x", PutMode.CREATE) == '"abc"'
    stub.assert_no_pending_responses()


def test_s3_409_on_an_update_is_a_conflict_and_never_resent() -> None:
    """Resending the old body would overwrite whoever won: the caller must re-read and recompute."""
    store, stub = stubbed_s3()
    stub.add_client_error("put_object", "ConditionalRequestConflict", http_status_code=409)
    with pytest.raises(Conflict) as info:
        store.put("k", b"x", PutMode.update('"old"'))
    assert isinstance(info.value, PreconditionFailed)
    assert isinstance(info.value.__cause__, ClientError)
    stub.assert_no_pending_responses()  # exactly one request was made


@pytest.mark.parametrize(
    ("code", "status", "mode", "expected"),
    [
        ("PreconditionFailed", 412, PutMode.CREATE, AlreadyExists),
        ("PreconditionFailed", 412, PutMode.update('"e"'), PreconditionFailed),
        ("NoSuchKey", 404, PutMode.update('"e"'), PreconditionFailed),
        ("NoSuchBucket", 404, PutMode.OVERWRITE, BucketMissing),
        ("AccessDenied", 403, PutMode.OVERWRITE, AccessDeniedByStore),
        ("SlowDown", 503, PutMode.OVERWRITE, StoreUnavailable),
        ("NotImplemented", 501, PutMode.update('"e"'), UnsafeStore),  # Swift's S3 layer: no If-Match on PUT
        ("NotImplemented", 501, PutMode.OVERWRITE, StoreUnavailable),
    ],
)
def test_s3_errors_are_translated_with_their_cause(code: str, status: int, mode: PutMode, expected: type) -> None:
    store, stub = stubbed_s3()
    stub.add_client_error("put_object", code, http_status_code=status)
    with pytest.raises(expected) as info:
        store.put("k", b"x", mode)
    assert isinstance(info.value.__cause__, ClientError)


# --- keys and clock -------------------------------------------------------------------


@pytest.mark.parametrize("key", ["../x", "a/../../x", "/abs", "a\x00b", "", "a//b", "a/.", "./a"])
def test_invalid_keys_are_refused(store: ObjectStore, key: str) -> None:
    with pytest.raises(InvalidKey):
        store.put(key, b"x", PutMode.OVERWRITE)
    with pytest.raises(InvalidKey):
        store.get(key)
    with pytest.raises(InvalidKey):
        store.head(key)
    with pytest.raises(InvalidKey):
        store.delete(key)


def test_local_store_never_writes_outside_its_root(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root")
    with pytest.raises(InvalidKey):
        store.put("../escaped", b"x", PutMode.OVERWRITE)
    with pytest.raises(InvalidKey):
        store.put(".s3task-meta/locks/x", b"x", PutMode.OVERWRITE)
    assert not (tmp_path / "escaped").exists()


def test_now_is_close_to_real_time(store: ObjectStore) -> None:
    store.list_keys("t/")  # on S3 the clock follows the Date of recent responses
    assert abs((store.now() - datetime.now(UTC)).total_seconds()) < 2
    assert store.now().tzinfo is not None


@pytest.mark.parametrize("store", ["moto_http"], indirect=True)
def test_s3_now_follows_the_server_date_not_a_skewed_local_clock(
    store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "clock", Clock(-3600.0))  # this machine's clock is an hour slow
    store.list_keys("t/")
    assert abs(store.clock.wall() - time.time() + 3600) < 1
    assert abs(store.now().timestamp() - time.time()) < 2


# --- the CAS probe --------------------------------------------------------------------


def test_cas_probe_passes_and_cleans_up(store: ObjectStore) -> None:
    cas_probe(store, "batch-tasks")
    assert store.list_keys("batch-tasks/") == []


class IgnoresConditions:
    """A store like some S3-compatibles: every put is an unconditional overwrite."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.description = "ignores conditions"

    def put(self, key, body, mode, **kwargs):
        return self.inner.put(key, body, PutMode.OVERWRITE, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_cas_probe_refuses_a_store_that_ignores_conditions(store: ObjectStore) -> None:
    with pytest.raises(UnsafeStore, match="conditional"):
        cas_probe(IgnoresConditions(store), "batch-tasks")
    assert store.list_keys("batch-tasks/") == []


def test_cas_probe_reports_a_store_error_during_the_burst(store: ObjectStore) -> None:
    """A request that fails in the burst is the store's error to report, not a verdict either way."""

    class Hiccup:
        description = "hiccup"
        failed = False

        def put(self, key, body, mode, **kwargs):
            if key.endswith("/burst") and not Hiccup.failed:
                Hiccup.failed = True
                raise StoreUnavailable(f"the store did not answer for {key}")
            return store.put(key, body, mode, **kwargs)

        def __getattr__(self, name):
            return getattr(store, name)

    with pytest.raises(StoreUnavailable):
        cas_probe(Hiccup(), "batch-tasks")
    assert store.list_keys("batch-tasks/") == []


# --- races ------------------------------------------------------------------------------

THREADS = 8
INCREMENTS = 25


def cas_increment(store: ObjectStore, key: str, times: int) -> None:
    """Add one to the counter ``times`` times: read → +1 → update, and on a lost race read again."""
    for _ in range(times):
        while True:
            got = store.get(key)
            try:
                store.put(key, str(int(got.body) + 1).encode(), PutMode.update(got.etag))
                break
            except PreconditionFailed:
                time.sleep(random.uniform(0, 0.01))  # jittered backoff, as update_record does


def test_race_compare_and_set_increments_total_exactly(store: ObjectStore) -> None:
    store.put("race/counter", b"0", PutMode.CREATE)
    barrier = threading.Barrier(THREADS)

    def worker(_: int) -> int:
        barrier.wait()
        return cas_increment(store, "race/counter", INCREMENTS)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))
    assert int(store.get("race/counter").body) == THREADS * INCREMENTS


def test_race_parallel_creates_have_one_winner(store: ObjectStore) -> None:
    for round_ in range(3):
        key = f"race/create-{round_}"
        barrier = threading.Barrier(THREADS)

        def worker(i: int, key: str = key, barrier: threading.Barrier = barrier) -> bool:
            barrier.wait()
            try:
                store.put(key, f"writer {i}".encode(), PutMode.CREATE)
                return True
            except AlreadyExists:
                return False

        with ThreadPoolExecutor(THREADS) as pool:
            won = list(pool.map(worker, range(THREADS)))
        assert sum(won) == 1
        assert store.get(key).body == f"writer {won.index(True)}".encode()


# Separate processes on the local backend: the locks must hold across processes, not just threads.

PROCESSES = 4

# Each child imports only the local store, says "ready", waits for "go" on stdin, then races.
_CHILD = """
import sys
from s3task.errors import AlreadyExists, PreconditionFailed
from s3task.store.base import PutMode
from s3task.store.local import LocalStore

store = LocalStore(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[2])):
    while True:
        got = store.get("race/counter")
        try:
            store.put("race/counter", str(int(got.body) + 1).encode(), PutMode.update(got.etag))
            break
        except PreconditionFailed:
            pass
try:
    store.put("race/once", sys.argv[3].encode(), PutMode.CREATE)
    print("won")
except AlreadyExists:
    print("lost")
"""


def test_local_race_across_processes(tmp_path: Path) -> None:
    """CAS increments and creates from separate processes on one local store."""
    root = str(tmp_path / "store")
    store = LocalStore(root)
    store.put("race/counter", b"0", PutMode.CREATE)
    env = child_env()
    children = [
        Proc([sys.executable, "-c", _CHILD, root, str(INCREMENTS), f"child {i}"], env=env,
             log=tmp_path / f"child-{i}.log", name=f"child {i}", stdin=subprocess.PIPE)
        for i in range(PROCESSES)
    ]  # fmt: skip
    try:
        for child in children:
            child.wait_for_output("ready", timeout=60)
        for child in children:  # all loaded and waiting: let them go together
            child.say("go")
        for child in children:
            child.wait(60)
        outputs = [child.output().split() for child in children]
    finally:
        for child in children:
            child.stop()
    assert [c.returncode for c in children] == [0] * PROCESSES
    assert int(store.get("race/counter").body) == PROCESSES * INCREMENTS
    assert sorted(o[-1] for o in outputs) == ["lost"] * (PROCESSES - 1) + ["won"]
    winner = next(i for i, o in enumerate(outputs) if o[-1] == "won")
    assert store.get("race/once").body == f"child {winner}".encode()
