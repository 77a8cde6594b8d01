"""Each quirk the S3 backend normalises, shown on the real server that has it (tests/realstores.py).

For every one: the raw answer of the server (boto3, no s3task in between), then what s3task's
store makes of it — the answer the contract suite expects of every store.
"""

from __future__ import annotations

import threading
import time

import pytest
from botocore.exceptions import ClientError

from s3task.errors import AccessDeniedByStore, AlreadyExists, BucketMissing, NotFound, PreconditionFailed
from s3task.store.base import PutMode
from s3task.store.probe import BURST
from s3task.store.s3 import _DATA_CONFIG, _RECORD_CONFIG, S3Store

pytestmark = pytest.mark.slow

WRONG_ETAG = '"0123456789abcdef0123456789abcdef"'


def _store(server, bucket: str | None = None, secret: str | None = None) -> S3Store:
    bucket = bucket or server.new_bucket()
    client = server.client(_RECORD_CONFIG, secret=secret)
    return S3Store(bucket, client=client, data_client=server.client(_DATA_CONFIG, secret=secret))


def _raw_error(call) -> tuple[int, str]:
    with pytest.raises(ClientError) as info:
        call()
    err = info.value.response
    return err["ResponseMetadata"]["HTTPStatusCode"], err["Error"]["Code"]


def test_seaweedfs_if_match_on_a_missing_key_is_412_and_a_failed_update(seaweedfs) -> None:
    store = _store(seaweedfs)
    raw = _raw_error(lambda: store.client.put_object(Bucket=store.bucket, Key="gone", Body=b"x", IfMatch=WRONG_ETAG))
    assert raw == (412, "PreconditionFailed")  # AWS answers 404 NoSuchKey
    with pytest.raises(PreconditionFailed):
        store.put("gone", b"x", PutMode.update(WRONG_ETAG))
    with pytest.raises(NotFound):
        store.head("gone")


def test_localstack_if_match_on_a_missing_key_is_404_and_a_failed_update(localstack) -> None:
    store = _store(localstack)
    raw = _raw_error(lambda: store.client.put_object(Bucket=store.bucket, Key="gone", Body=b"x", IfMatch=WRONG_ETAG))
    assert raw == (404, "NoSuchKey")
    with pytest.raises(PreconditionFailed):
        store.put("gone", b"x", PutMode.update(WRONG_ETAG))


def test_localstack_conditional_delete_is_501_and_done_by_a_conditional_overwrite(localstack) -> None:
    store = _store(localstack)
    etag = store.put("k", b"v1", PutMode.CREATE)
    raw = _raw_error(lambda: store.client.delete_object(Bucket=store.bucket, Key="k", IfMatch=etag))
    assert raw == (501, "NotImplemented")
    assert store.get("k").body == b"v1"  # the 501 deleted nothing
    with pytest.raises(PreconditionFailed):
        store.delete("k", if_match=WRONG_ETAG)
    assert store.get("k").body == b"v1"  # a wrong ETag changes nothing, tombstone or not
    newer = store.put("k", b"v2", PutMode.update(etag))
    with pytest.raises(PreconditionFailed):
        store.delete("k", if_match=etag)  # the version compared against is gone: refused
    assert store.get("k").body == b"v2"
    store.delete("k", if_match=newer)
    with pytest.raises(NotFound):
        store.head("k")
    with pytest.raises(PreconditionFailed):
        store.delete("k", if_match=newer)  # deleting a missing key with a condition fails, as elsewhere


def test_localstack_lists_a_common_prefix_equal_to_start_after_which_the_store_drops(localstack) -> None:
    store = _store(localstack)
    for key in ("p/a/1", "p/b/1", "p/c/1"):
        store.put(key, b"", PutMode.OVERWRITE)
    raw = store.client.list_objects_v2(Bucket=store.bucket, Prefix="p/", Delimiter="/", StartAfter="p/a/")
    assert [c["Prefix"] for c in raw["CommonPrefixes"]] == ["p/a/", "p/b/", "p/c/"]
    assert store.list_prefixes("p/", start_after="p/a/") == ["p/b/", "p/c/"]
    assert store.list_prefixes("p/", start_after="p/a/", limit=1) == ["p/b/"]


def test_seaweedfs_checks_the_secret_key(seaweedfs) -> None:
    bucket = seaweedfs.new_bucket()
    wrong = _store(seaweedfs, bucket, secret="not-the-secret")
    raw = _raw_error(lambda: wrong.client.head_object(Bucket=bucket, Key="x"))
    assert raw[0] == 403
    with pytest.raises(AccessDeniedByStore):
        wrong.put("x", b"x", PutMode.CREATE)


def test_localstack_accepts_any_secret_key(localstack) -> None:
    """Not normalised (nothing to normalise): why presigned URLs are checked on SeaweedFS only."""
    bucket = localstack.new_bucket()
    wrong = _store(localstack, bucket, secret="not-the-secret")
    wrong.put("x", b"x", PutMode.CREATE)
    assert _store(localstack, bucket).get("x").body == b"x"


def test_localstack_missing_bucket_is_bucket_missing(localstack) -> None:
    store = _store(localstack, bucket="t-no-such-bucket")
    with pytest.raises(BucketMissing):
        store.put("x", b"x", PutMode.CREATE)


def test_seaweedfs_creates_a_missing_bucket_on_the_first_put(seaweedfs) -> None:
    """Credentials with the Admin action create the bucket a put names (docs/STORES.md): no BucketMissing."""
    store = _store(seaweedfs, bucket="t-made-by-a-put")
    store.put("x", b"x", PutMode.CREATE)
    assert store.get("x").body == b"x"


def test_seaweedfs_queued_contending_creates_have_one_winner_however_long_the_losers_wait(seaweedfs) -> None:
    """SeaweedFS queues contending conditional writes on one key and retries them about once a second.
    On a busy machine a loser's 412 can come after the record client's read timeout (4.1 s was seen
    with the suite on both cores); botocore then sends the create again, and it is refused again. What
    the contract races rely on holds either way: one winner, every other create AlreadyExists."""
    store = _store(seaweedfs)
    barrier, lock = threading.Barrier(BURST), threading.Lock()
    answers: list[tuple[float, bool]] = []

    def create(i: int) -> None:
        barrier.wait()
        started = time.monotonic()
        try:
            store.put("contended", str(i).encode(), PutMode.CREATE)
            won = True
        except AlreadyExists:
            won = False
        with lock:
            answers.append((time.monotonic() - started, won))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(BURST)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == BURST, "every create answered: won, or AlreadyExists (no other error)"
    assert sum(won for _, won in answers) == 1
