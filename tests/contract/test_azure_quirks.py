"""Each Azure quirk the Azure backend normalises, shown on Azurite 3.37.0 (tests/realstores.py).

For every one: the raw answer of the server (azure-storage-blob, no s3task in between), then what
s3task's store makes of it — the answer the contract suite expects of every store.
"""

from __future__ import annotations

import threading
import time

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError

import s3task.store.azure
from s3task.clock import Clock
from s3task.errors import AccessDeniedByStore, AlreadyExists, BucketMissing, NotFound, PreconditionFailed
from s3task.store.azure import AzureStore
from s3task.store.azure_errors import _from_response_error, error_code
from s3task.store.base import PutMode

pytestmark = pytest.mark.slow

WRONG_ETAG = '"0x8DC0123456789AB"'


def _raw_error(call) -> tuple[int, str]:
    with pytest.raises(HttpResponseError) as info:
        call()
    return int(info.value.status_code or 0), error_code(info.value)


@pytest.fixture
def store(azurite) -> AzureStore:
    return azurite.store(azurite.new_bucket())


def test_create_of_an_existing_blob_is_409_and_already_exists(store: AzureStore) -> None:
    store.put("k", b"one", PutMode.CREATE)
    blob = store.client.get_blob_client("k")
    raw = _raw_error(lambda: blob.upload_blob(b"two", match_condition=MatchConditions.IfMissing))
    assert raw == (409, "BlobAlreadyExists")  # S3 answers 412
    with pytest.raises(AlreadyExists):
        store.put("k", b"two", PutMode.CREATE)
    assert store.get("k").body == b"one"


def test_if_match_on_a_missing_blob_is_412_on_azurite_and_a_failed_update(store: AzureStore) -> None:
    blob = store.client.get_blob_client("gone")
    raw = _raw_error(
        lambda: blob.upload_blob(b"x", overwrite=True, etag=WRONG_ETAG, match_condition=MatchConditions.IfNotModified)
    )
    assert raw == (412, "ConditionNotMet")  # Azure itself answers 404 BlobNotFound (Azurite issue #2751)
    with pytest.raises(PreconditionFailed):
        store.put("gone", b"x", PutMode.update(WRONG_ETAG))
    with pytest.raises(PreconditionFailed):
        store.delete("gone", if_match=WRONG_ETAG)
    with pytest.raises(NotFound):
        store.head("gone")


def test_a_404_on_an_update_as_azure_answers_it_is_a_failed_update() -> None:
    """What Azure (not Azurite) answers to If-Match on a missing blob: the blob compared against is gone."""
    e = HttpResponseError(message="The specified blob does not exist.")
    e.status_code, e.error_code = 404, "BlobNotFound"
    assert isinstance(_from_response_error(e, "k", "update"), PreconditionFailed)
    assert type(_from_response_error(e, "k", "get")) is NotFound
    e.status_code, e.error_code = 404, "ContainerNotFound"
    assert isinstance(_from_response_error(e, "k", "update"), BucketMissing)


def test_a_stale_etag_on_a_block_list_commit_is_412_and_changes_nothing(
    store: AzureStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3task.store.azure, "BLOCK_SIZE", 1024)
    stale = store.put("out", b"first", PutMode.CREATE)
    current = store.put("out", b"second", PutMode.update(stale))
    with pytest.raises(PreconditionFailed), store.open_write("out", PutMode.update(stale)) as w:
        w.write(b"x" * 3000)  # three staged blocks: a Put Block List, not a Put Blob
    assert (store.get("out").body, store.head("out").etag) == (b"second", current)
    with store.open_write("out", PutMode.update(current)) as w:
        w.write(b"y" * 3000)
    assert store.get("out").body == b"y" * 3000
    assert len(store.client.get_blob_client("out").get_block_list("committed")[0]) == 3


def test_metadata_names_with_hyphens_are_refused_raw_and_kept_exactly_by_the_store(store: AzureStore) -> None:
    blob = store.client.get_blob_client("m")
    raw = _raw_error(lambda: blob.upload_blob(b"x", metadata={"write-id": "w1"}))
    assert raw == (400, "InvalidMetadata")  # Azure names are C# identifiers; s3task's have hyphens
    metadata = {"write-id": "w1", "s3task-deleting": "1", "by": "ada", "a_b": "c"}
    store.put("m", b"x", PutMode.CREATE, metadata=metadata)
    assert store.head("m").metadata == metadata == store.get("m").meta.metadata
    assert blob.get_blob_properties().metadata == {
        "write_2did": "w1",
        "s3task_2ddeleting": "1",
        "by": "ada",
        "a_5fb": "c",
    }


def test_etags_are_opaque_and_new_on_every_write_of_the_same_bytes(store: AzureStore) -> None:
    """Why s3task's records carry a fresh write_id is moot here: the same bytes never keep an ETag."""
    first = store.put("e", b"same", PutMode.OVERWRITE)
    second = store.put("e", b"same", PutMode.OVERWRITE)
    assert first != second and first.startswith('"0x')
    with pytest.raises(PreconditionFailed):
        store.put("e", b"same", PutMode.update(first))


def test_blocks_of_an_abandoned_write_stay_out_of_reads_and_listings(
    store: AzureStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing to abort (unlike S3's multipart uploads): uncommitted blocks are invisible, and a commit drops them."""
    monkeypatch.setattr(s3task.store.azure, "BLOCK_SIZE", 1024)
    with pytest.raises(RuntimeError), store.open_write("t/out", PutMode.CREATE) as w:
        w.write(b"x" * 3000)
        raise RuntimeError("handler crashed")
    raw = [b.name for b in store.client.list_blobs(name_starts_with="t/", include=["uncommittedblobs"])]
    assert raw == ["t/out"]  # the staged blocks are there, held by Azure (a week at most)
    assert store.list_keys("t/") == []
    with pytest.raises(NotFound):
        store.head("t/out")
    store.put("t/out", b"retry", PutMode.CREATE)  # the next attempt's create: not refused by them
    assert store.get("t/out").body == b"retry"
    assert store.client.get_blob_client("t/out").get_block_list("uncommitted")[1] == []


def test_two_streamed_creates_of_one_blob_have_one_winner_with_its_whole_body(
    store: AzureStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two attempts writing one output at once stage their blocks side by side; one block list wins, whole."""
    monkeypatch.setattr(s3task.store.azure, "BLOCK_SIZE", 1024)
    staged = threading.Barrier(2)
    results: dict[int, str] = {}

    def write(i: int) -> None:
        try:
            with store.open_write("t/out", PutMode.CREATE) as w:
                w.write(bytes([65 + i]) * 3000)
                staged.wait(timeout=30)  # both have staged blocks of the blob before either commits
        except AlreadyExists:
            results[i] = "lost"
            return
        results[i] = "won"

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results.values()) == ["lost", "won"]
    winner = next(i for i, r in results.items() if r == "won")
    assert store.get("t/out").body == bytes([65 + winner]) * 3000


def test_listings_follow_continuation_markers_and_start_after(
    store: AzureStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Azure has no StartAfter: pages of 100 (not 5,000) make the listing follow markers past it."""
    monkeypatch.setattr(s3task.store.azure, "PAGE", 100)
    keys = [f"many/{i:04d}/x" for i in range(250)]
    for k in keys:
        store.put(k, b"", PutMode.OVERWRITE)
    assert store.list_keys("many/") == keys
    assert store.list_keys("many/", start_after=keys[149], limit=80) == keys[150:230]
    assert store.list_prefixes("many/", start_after="many/0099/", limit=120) == [k[:-1] for k in keys[100:220]]


def test_now_follows_the_server_date_not_a_skewed_local_clock(azurite) -> None:
    store = AzureStore(azurite.new_bucket(), connection_string=azurite.connection_string, clock=Clock(-3600.0))
    store.list_keys("t/")
    assert abs(store.clock.wall() - time.time() + 3600) < 1
    assert abs(store.now().timestamp() - time.time()) < 2


def test_a_wrong_account_key_is_access_denied_and_a_missing_container_bucket_missing(azurite) -> None:
    wrong_key = azurite.connection_string.replace(azurite.secret_key, "d3Jvbmcga2V5" * 8)
    with pytest.raises(AccessDeniedByStore):
        AzureStore(azurite.new_bucket(), connection_string=wrong_key).head("x")
    missing = AzureStore("no-such-container", connection_string=azurite.connection_string)
    with pytest.raises(BucketMissing):
        missing.put("x", b"x", PutMode.CREATE)
    with pytest.raises(BucketMissing):
        missing.head("x")
