"""The GCS backend on fake-gcs-server 1.54.0 (tests/realstores.py): what the emulator does not check that GCS
does (asserted, so a release that starts checking shows), what the backend does about it, and the URLs.

- fake-gcs-server ignores ``ifGenerationMatch`` on a delete, on a resumable upload and on a read; it
  enforces it on a single upload (the contract suite's records, creates and races run on that);
- it checks no signature of a signed URL, nor the ``x-goog-if-generation-match`` header an upload URL
  signs: tests/gcs_signatures.py checks the signature as GCS would;
- URLs signed through IAM's signBlob (credentials with no key) go through the client library's own
  call, sent to a stand-in of IAM on 127.0.0.1 (tests/gcs_signatures.py);
- for uploads in parts (s3task/store/gcs_parts.py): it ignores ``ifGenerationMatch`` on a compose and keeps no
  lifecycle rule; it serves no XML API multipart upload, and its resumable sessions commit what they hold when
  asked how much that is, and stay open after a DELETE (why a large file goes as objects joined by compose).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
import requests
from gcs_signatures import DENIED, TOKEN, SignBlob, public_key_of, routed_to, verify
from google.auth.credentials import Credentials

import s3task.store.gcs
from s3task.clock import Clock
from s3task.errors import AlreadyExists, BucketMissing, NotFound, PreconditionFailed, StoreError
from s3task.store import open_store
from s3task.store.base import PutMode
from s3task.store.gcs import GcsStore

pytestmark = pytest.mark.slow
MIB = 1024 * 1024


@pytest.fixture
def gcs(fake_gcs: Any) -> GcsStore:
    return fake_gcs.store(fake_gcs.new_bucket())


class Workload(Credentials):
    """A workload's service account as the metadata server gives it: a token, an email, no private key."""

    def __init__(self, email: str) -> None:
        super().__init__()
        self.service_account_email = email

    def refresh(self, request: Any) -> None:
        self.token = TOKEN


# --- what the emulator does not check -------------------------------------------------------------------


def test_the_emulator_ignores_a_deletes_generation_precondition(gcs: GcsStore) -> None:
    stale = gcs.put("t/a", b"one", PutMode.CREATE)
    gcs.put("t/a", b"two", PutMode.update(stale))
    gcs.delete("t/a", if_match=stale)  # GCS: 412 → PreconditionFailed, and the object stays
    with pytest.raises(NotFound):
        gcs.head("t/a")


def test_the_emulator_ignores_a_resumable_uploads_precondition(gcs: GcsStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(s3task.store.gcs, "CHUNK_SIZE", 256 * 1024)
    gcs.put("t/out", b"first", PutMode.CREATE)
    with gcs.open_write("t/out", PutMode.CREATE) as w:  # GCS: 412 → AlreadyExists
        w.write(b"x" * (256 * 1024 + 1))
    assert gcs.head("t/out").size == 256 * 1024 + 1
    with pytest.raises(AlreadyExists), gcs.open_write("t/out", PutMode.CREATE) as w:  # one request: enforced
        w.write(b"small")


def test_the_emulator_ignores_a_composes_precondition(gcs: GcsStore) -> None:
    gcs.put("t/in.csv", b"first\n", PutMode.CREATE)
    upload = gcs.create_multipart("t/in.csv", content_type="text/csv")
    tag = gcs.upload_part("t/in.csv", upload, 1, b"second\n")
    gcs.complete_multipart("t/in.csv", upload, [(1, tag)])  # GCS: 412 → AlreadyExists, and the object stays
    assert gcs.get("t/in.csv").body == b"second\n"


def test_the_emulator_keeps_no_lifecycle_rule(gcs: GcsStore) -> None:
    from s3task.store import gcs_bucket

    assert gcs_bucket.apply_parts_rule(gcs).what == "added"  # PATCHed, answered 200
    gcs.bucket.reload()
    assert list(gcs.bucket.lifecycle_rules) == []  # GCS keeps it: tests/contract/test_gcs_parts.py checks the ask


def test_the_emulator_serves_no_xml_api_multipart_upload(gcs: GcsStore, fake_gcs: Any) -> None:
    started = requests.post(f"{fake_gcs.endpoint}/{gcs.bucket_name}/t/big.csv?uploads", timeout=10)
    assert started.status_code == 400 and "invalid uploadType" in started.text  # GCS: 200, an UploadId


def test_the_emulators_resumable_session_commits_when_asked_what_it_holds(gcs: GcsStore) -> None:
    """GCS answers ``Content-Range: bytes */SIZE`` with 308 and the Range it holds, and a DELETE ends the session
    (499); fake-gcs-server makes the object of what it holds and drops the session, and a DELETE leaves it open."""
    chunk, size = 256 * 1024, 1024 * 1024
    session = gcs.bucket.blob("t/session.csv").create_resumable_upload_session(
        content_type="text/csv", size=size, origin="http://127.0.0.1:8501", if_generation_match=0
    )
    first = requests.put(
        session, data=b"a" * chunk, headers={"Content-Range": f"bytes 0-{chunk - 1}/{size}"}, timeout=10
    )
    assert first.status_code == 308 and first.headers["Range"] == f"bytes=0-{chunk - 1}"
    asked = requests.put(session, headers={"Content-Range": f"bytes */{size}"}, timeout=10)
    assert asked.status_code == 200 and gcs.head("t/session.csv").size == chunk  # committed: a quarter of the file
    other = gcs.bucket.blob("t/other.csv").create_resumable_upload_session(content_type="text/csv", size=size)
    requests.put(other, data=b"b" * chunk, headers={"Content-Range": f"bytes 0-{chunk - 1}/{size}"}, timeout=10)
    assert requests.delete(other, timeout=10).status_code == 499
    rest = requests.put(
        other, data=b"b" * (size - chunk), headers={"Content-Range": f"bytes {chunk}-{size - 1}/{size}"}, timeout=10
    )
    assert rest.status_code == 200 and gcs.head("t/other.csv").size == size  # the "cancelled" session went on


def test_the_emulator_ignores_a_reads_precondition_and_the_store_pins_the_generation(gcs: GcsStore) -> None:
    stale = gcs.put("t/a", b"one", PutMode.CREATE)
    gcs.put("t/a", b"two", PutMode.update(stale))
    raw = gcs.bucket.blob("t/a").download_as_bytes(if_generation_match=int(stale))
    assert raw == b"two"  # GCS: 412
    with pytest.raises(PreconditionFailed):  # the store asks for the generation too, and checks the answer's
        gcs.get("t/a", if_match=stale)
    with pytest.raises(PreconditionFailed), gcs.open_read("t/a", if_match=stale):
        pass


def test_a_read_that_outlives_its_generation_fails(gcs: GcsStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges after the first ask for the first one's generation: a replaced object is not read half and half."""
    monkeypatch.setattr(s3task.store.gcs, "CHUNK_SIZE", 4)
    gcs.put("t/a", b"0123456789", PutMode.CREATE)
    with gcs.open_read("t/a") as f:
        assert f.read(4) == b"0123"
        gcs.put("t/a", b"abcdefghij", PutMode.OVERWRITE)
        with pytest.raises(PreconditionFailed):
            f.read(8)


def test_a_write_or_listing_in_a_missing_bucket_is_bucket_missing(fake_gcs: Any) -> None:
    gone = fake_gcs.store("no-such-bucket")
    with pytest.raises(BucketMissing):
        gone.put("t/a", b"x", PutMode.CREATE)
    with pytest.raises(BucketMissing):
        gone.list_keys("t/")


def test_the_clock_follows_the_date_header_not_a_skewed_machine(fake_gcs: Any) -> None:
    store = fake_gcs.store(fake_gcs.new_bucket(), clock=Clock(-3600.0))  # this machine an hour slow
    store.list_keys("t/")
    assert abs(store.now().timestamp() - time.time()) < 2


# --- signed URLs ------------------------------------------------------------------------------------------


def test_a_download_url_reads_the_object_and_its_signature_holds(gcs: GcsStore, fake_gcs: Any) -> None:
    gcs.put("t/out.csv", b"a,b\n1,2\n", PutMode.CREATE, content_type="text/csv")
    url = gcs.presign_get("t/out.csv", expires=300, filename="June result.csv")
    assert url is not None and url.startswith(f"{fake_gcs.endpoint}/{gcs.bucket_name}/t/out.csv?")
    assert "response-content-disposition=attachment" in url
    got = requests.get(url, timeout=10)
    assert got.ok and got.content == b"a,b\n1,2\n"
    key = public_key_of(str(fake_gcs.key_file))
    assert verify(url, key, "GET")
    assert not verify(url, key, "PUT")
    other = url.replace("/t/out.csv?", "/t/status.json?")  # aimed at another object
    assert not verify(other, key, "GET")
    tampered = url[:-4] + ("0000" if not url.endswith("0000") else "1111")
    assert not verify(tampered, key, "GET")
    assert requests.get(tampered, timeout=10).ok  # the emulator checks no signature (GCS: 403)


def test_an_upload_url_creates_once_with_the_signed_headers(gcs: GcsStore, fake_gcs: Any) -> None:
    url = gcs.presign_put("t/input.csv", expires=300, content_type="text/csv")
    assert url is not None
    headers = {"Content-Type": "text/csv", **gcs.put_headers()}
    assert headers["x-goog-if-generation-match"] == "0"
    sent = requests.put(url, data=b"id\n1\n", headers=headers, timeout=10)
    assert sent.ok, sent.text
    meta = gcs.head("t/input.csv")
    assert (meta.size, meta.content_type) == (5, "text/csv")
    assert gcs.get("t/input.csv", if_match=meta.etag).body == b"id\n1\n"
    key = public_key_of(str(fake_gcs.key_file))
    assert verify(url, key, "PUT", headers)
    assert not verify(url, key, "PUT", {"Content-Type": "text/csv"})  # without the create-only header
    assert not verify(url, key, "PUT", {**headers, "Content-Type": "text/html"})
    assert not verify(url, key, "PUT", {**headers, "x-goog-if-generation-match": meta.etag})
    # GCS refuses a second PUT to the URL (412: the header signed makes it a create); the emulator takes it.
    assert requests.put(url, data=b"late\n", headers=headers, timeout=10).ok


def test_credentials_without_a_key_sign_through_iam_sign_blob(fake_gcs: Any) -> None:
    stand_in = SignBlob()
    try:
        email = "worker@s3task-emulator.iam.gserviceaccount.com"
        store = fake_gcs.store(fake_gcs.new_bucket(), signer=None, credentials=Workload(email))
        store.put("t/out.csv", b"x\n", PutMode.CREATE)
        with routed_to(stand_in):
            url = store.presign_get("t/out.csv", expires=600)
            put_url = store.presign_put("t/in.csv", expires=600, content_type="text/csv")
        assert url is not None and put_url is not None
        assert stand_in.calls == [email, email]
        assert f"X-Goog-Credential={email.replace('@', '%40')}" in url
        assert verify(url, stand_in.public_key, "GET")
        assert verify(put_url, stand_in.public_key, "PUT", {"Content-Type": "text/csv", **store.put_headers()})
        assert requests.get(url, timeout=10).content == b"x\n"
    finally:
        stand_in.stop()


def test_a_refused_sign_blob_makes_no_urls_and_is_not_asked_again(
    fake_gcs: Any, caplog: pytest.LogCaptureFixture
) -> None:
    stand_in = SignBlob()
    try:
        store = fake_gcs.store(fake_gcs.new_bucket(), signer=None, credentials=Workload(DENIED))
        with routed_to(stand_in), caplog.at_level(logging.WARNING, logger="s3task.store.gcs_urls"):
            assert store.presign_get("t/out.csv", expires=600) is None
            assert store.presign_put("t/in.csv", expires=600, content_type="text/csv") is None
            check = store.sign_check()
        assert stand_in.calls == [DENIED, DENIED]  # one refusal, then none asked for; doctor asks again
        assert "roles/iam.serviceAccountTokenCreator" in caplog.text
        assert check is not None and not check[0] and "roles/iam.serviceAccountTokenCreator" in check[1]
    finally:
        stand_in.stop()


def test_credentials_that_cannot_sign_make_no_urls(fake_gcs: Any) -> None:
    store = fake_gcs.store(fake_gcs.new_bucket(), signer=None)  # anonymous, as on the emulator with no key
    assert store.presign_get("t/out.csv", expires=60) is None
    assert store.presign_put("t/in.csv", expires=60, content_type="text/csv") is None
    check = store.sign_check()
    assert check is not None and not check[0]


# --- opening gs:// URLs ----------------------------------------------------------------------------------


def test_gs_urls_open_on_the_emulator_with_a_key_that_signs(fake_gcs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = fake_gcs.new_bucket()
    for name, value in fake_gcs.env.items():
        monkeypatch.setenv(name, value)
    store, layout = open_store(f"gs://{bucket}/tasks")
    assert isinstance(store, GcsStore) and layout.prefix == "tasks"
    assert store.description == f"gs://{bucket} ({fake_gcs.endpoint})"
    store.put("tasks/x", b"1", PutMode.CREATE)
    assert store.presign_get("tasks/x", expires=60) is not None
    assert open_store(f"gs://{bucket}")[1].prefix == "batch-tasks"
    with pytest.raises(ValueError, match="names no bucket"):
        open_store("gs:///tasks")


def test_gs_urls_without_credentials_say_what_is_needed(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(StoreError, match="Application Default Credentials"):
        open_store("gs://bucket/tasks")
