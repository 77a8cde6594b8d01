"""Signed transfer routes for the local store: tokens, streaming up and down, refusals, the key file."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from apps.http_server import serve
from starlette.applications import Starlette

from s3task.layout import Layout
from s3task.store.local import META_DIR, LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web.transfer import KEY_FILE, Grant, TransferDenied, UrlSigner, local_secret, signer_for, transfer_mount

ALICE = Actor("alice")
SECRET = b"k" * 32
MB = 1 << 20


class Clock:
    """A settable clock for the signer: expiry is tested by moving it, not by sleeping."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class SpyStore(LocalStore):
    """A local store that records the size of every write, to show uploads arrive in chunks."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.writes: list[int] = []

    @contextmanager
    def open_write(self, key, mode, *, content_type=None, metadata=None):
        with super().open_write(key, mode, content_type=content_type, metadata=metadata) as w:
            writes = self.writes

            class Counting:
                def write(self, data: bytes) -> int:
                    writes.append(len(data))
                    return w.write(data)

            counting = Counting()
            yield counting
        counting.etag = w.etag


@dataclass
class Env:
    base: str
    store: SpyStore
    layout: Layout
    service: TaskService
    clock: Clock

    def new_task(self) -> tuple[str, str]:
        """A created task: (task id, its upload URL)."""
        created = self.service.create(ALICE, "transfer test", "copy")
        self.store.writes.clear()  # count only what comes through the transfer route
        return created.record.task_id, self.base + created.upload_url


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    store, layout, clock = SpyStore(tmp_path / "store"), Layout(), Clock()
    signer = UrlSigner(SECRET, clock=clock)
    service = TaskService(store, layout, url_seconds=60, url_signer=signer)
    app = Starlette(routes=[transfer_mount(store, layout, signer, max_bytes=16 * MB)])
    with serve(app) as base:
        yield Env(base, store, layout, service, clock)


def _body(size: int, piece: int = 256 * 1024) -> Iterator[bytes]:
    """A CSV of ``size`` bytes, generated piece by piece (sent chunked: no Content-Length)."""
    yield b"n,text\n"
    sent, i = 7, 0
    while sent < size:
        row = f"{i},{'x' * 50}\n".encode() * (piece // 60)
        row = row[: size - sent]
        sent += len(row)
        i += 1
        yield row


# --- tokens ---------------------------------------------------------------------------------


def test_token_round_trip_binds_method_key_expiry_and_type() -> None:
    clock = Clock()
    signer = UrlSigner(SECRET, clock=clock)
    url = signer.presign_put("p/7ZZZZZZZZZZZZZZZZZZZZZZZZZ/input.csv", expires=60, content_type="text/csv")
    assert url.startswith("/transfer/")
    grant = signer.verify(url.rsplit("/", 1)[1], "PUT")
    assert grant == Grant("PUT", "p/7ZZZZZZZZZZZZZZZZZZZZZZZZZ/input.csv", int(clock.now) + 60, content_type="text/csv")


@pytest.mark.parametrize(
    ("tamper", "code"),
    [
        (lambda t: t[:-2] + ("AA" if t[-2:] != "AA" else "BB"), "invalid_signature"),  # forged signature
        (lambda t: t.split(".")[0], "invalid_signature"),  # no signature at all
        (lambda t: "x" + t, "invalid_signature"),  # payload changed
        (lambda t: "é" + t, "invalid_signature"),  # not even ASCII
    ],
)
def test_tampered_tokens_are_refused(tamper, code: str) -> None:
    signer = UrlSigner(SECRET, clock=Clock())
    token = signer.sign(Grant("GET", "a/b.csv", 2_000_000_000))
    with pytest.raises(TransferDenied) as e:
        signer.verify(tamper(token), "GET")
    assert (e.value.status, e.value.code) == (403, code)


def test_another_key_cannot_verify_a_token() -> None:
    token = UrlSigner(SECRET).sign(Grant("GET", "a/b.csv", 2_000_000_000))
    with pytest.raises(TransferDenied, match="signature"):
        UrlSigner(b"z" * 32).verify(token, "GET")


def test_a_key_swapped_into_a_signed_payload_is_refused() -> None:
    import base64
    import json

    signer = UrlSigner(SECRET, clock=Clock())
    _payload, mac = signer.sign(Grant("GET", "p/mine.csv", 2_000_000_000)).split(".")
    other = json.dumps({"m": "GET", "k": "p/theirs.csv", "e": 2_000_000_000}, separators=(",", ":")).encode()
    forged = base64.urlsafe_b64encode(other).rstrip(b"=").decode() + "." + mac
    with pytest.raises(TransferDenied, match="signature"):
        signer.verify(forged, "GET")


def test_expiry_is_checked_with_the_signers_clock() -> None:
    clock = Clock()
    signer = UrlSigner(SECRET, clock=clock)
    token = signer.presign_get("a/b.csv", expires=30).rsplit("/", 1)[1]
    clock.now += 29
    assert signer.verify(token, "GET").key == "a/b.csv"
    clock.now += 1.5
    with pytest.raises(TransferDenied) as e:
        signer.verify(token, "GET")
    assert e.value.code == "expired"


def test_short_secrets_are_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        UrlSigner(b"short")


# --- the signing key -------------------------------------------------------------------------


def test_local_key_is_generated_once_with_owner_only_permissions(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    path = store.root / META_DIR / KEY_FILE
    assert not path.exists()
    first = local_secret(store.root)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Another process (the CLI, a second app) reads the same key: URLs signed by one verify in the other.
    url = signer_for(store).presign_get("a/b.csv", expires=60)
    assert signer_for(LocalStore(store.root)).verify(url.rsplit("/", 1)[1], "GET")
    assert local_secret(store.root) == first
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".signing-key-")] == []


def test_concurrent_first_use_agrees_on_one_key(tmp_path: Path) -> None:
    root = tmp_path / "store"
    LocalStore(root)
    barrier, found = threading.Barrier(8), []

    def one() -> None:
        barrier.wait()
        found.append(local_secret(root))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 8 and len(set(found)) == 1


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    local_secret(store.root)
    os.chmod(store.root / META_DIR / KEY_FILE, 0o644)
    with pytest.raises(PermissionError, match="chmod 600"):
        local_secret(store.root)


def test_configured_key_wins_and_s3_needs_no_signer(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    signer = signer_for(store, key="s" * 40)
    token = signer.presign_get("a/b.csv", expires=60).rsplit("/", 1)[1]
    UrlSigner(b"s" * 40).verify(token, "GET")
    assert not (store.root / META_DIR / KEY_FILE).exists()
    assert signer_for(object()) is None  # type: ignore[arg-type]  # stores that presign themselves


# --- over HTTP -------------------------------------------------------------------------------


def test_multi_megabyte_upload_and_download_stream_in_chunks(env: Env) -> None:
    task_id, put_url = env.new_task()
    size = 6 * MB + 123
    digest = hashlib.md5(b"".join(_body(size)), usedforsecurity=False).hexdigest()

    r = requests.put(put_url, data=_body(size), headers={"Content-Type": "text/csv"}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == f'"{digest}"' == r.json()["etag"]
    assert r.json()["size"] == size
    # The server wrote ~1 MB at a time, never the whole body at once.
    assert len(env.store.writes) >= 4 and max(env.store.writes) < 2 * MB
    assert env.store.head(env.layout.input_key(task_id)).size == size

    get_url = env.base + env.service.url_signer.presign_get(
        env.layout.input_key(task_id), expires=60, filename="my file (1).csv"
    )
    with requests.get(get_url, stream=True, timeout=30) as got:
        assert got.status_code == 200
        assert got.headers["Content-Disposition"] == 'attachment; filename="my file 1.csv"'
        assert got.headers["Content-Length"] == str(size)
        assert got.headers["Content-Type"].startswith("text/csv")
        received = hashlib.md5(usedforsecurity=False)
        pieces = 0
        for piece in got.iter_content(256 * 1024):
            received.update(piece)
            pieces += 1
    assert received.hexdigest() == digest and pieces > 1

    env.service.submit(ALICE, task_id)  # the uploaded file is a valid input


def test_expired_upload_link_is_refused(env: Env) -> None:
    _task_id, put_url = env.new_task()
    env.clock.now += 61
    r = requests.put(put_url, data=b"a\n1\n", headers={"Content-Type": "text/csv"}, timeout=10)
    assert r.status_code == 403
    assert r.json()["code"] == "expired"
    assert "expired" in r.json()["message"]
    assert env.store.writes == []


def test_forged_wrong_method_and_wrong_key_are_refused(env: Env) -> None:
    task_id, put_url = env.new_task()
    token = put_url.rsplit("/", 1)[1]
    forged = put_url[:-3] + ("AAA" if not put_url.endswith("AAA") else "BBB")
    r = requests.put(forged, data=b"a\n1\n", headers={"Content-Type": "text/csv"}, timeout=10)
    assert (r.status_code, r.json()["code"]) == (403, "invalid_signature")

    r = requests.get(put_url, timeout=10)  # an upload link cannot download
    assert (r.status_code, r.json()["code"]) == (403, "wrong_method")

    get_url = env.base + env.service.url_signer.presign_get(env.layout.input_key(task_id), expires=60)
    r = requests.put(get_url, data=b"a\n1\n", headers={"Content-Type": "text/csv"}, timeout=10)
    assert (r.status_code, r.json()["code"]) == (403, "wrong_method")

    # A validly signed PUT for a key that is not a task's input (e.g. its status.json).
    status_put = env.base + env.service.url_signer.presign_put(
        env.layout.status_key(task_id), expires=60, content_type="text/csv"
    )
    r = requests.put(status_put, data=b"{}", headers={"Content-Type": "text/csv"}, timeout=10)
    assert (r.status_code, r.json()["code"]) == (403, "not_uploadable")

    r = requests.put(put_url, data=b"a\n1\n", headers={"Content-Type": "application/vnd.ms-excel"}, timeout=10)
    assert (r.status_code, r.json()["code"]) == (403, "content_type_mismatch")
    assert "Content-Type: text/csv" in r.json()["message"]

    assert env.store.writes == []
    ok = requests.put(env.base + "/transfer/" + token, data=b"a\n1\n", headers={"Content-Type": "text/csv"}, timeout=10)
    assert ok.status_code == 200  # the untouched link still works


def test_put_after_submit_is_refused_and_changes_nothing(env: Env) -> None:
    task_id, put_url = env.new_task()
    assert requests.put(put_url, data=b"a,b\n1,2\n", headers={"Content-Type": "text/csv"}, timeout=10).ok
    queued = env.service.submit(ALICE, task_id)

    r = requests.put(put_url, data=b"a,b\nevil,row\n", headers={"Content-Type": "text/csv"}, timeout=10)
    assert r.status_code == 409
    assert r.json()["code"] == "invalid_transition"
    assert r.json()["message"].startswith(f"cannot replace the input: task {task_id} is queued")
    assert env.store.get(env.layout.input_key(task_id)).body == b"a,b\n1,2\n"
    assert env.store.head(env.layout.input_key(task_id)).etag == queued.input_etag


def test_too_large_uploads_are_refused_without_publishing(env: Env) -> None:
    task_id, put_url = env.new_task()
    declared = requests.put(put_url, data=b"x" * (16 * MB + 1), headers={"Content-Type": "text/csv"}, timeout=30)
    assert (declared.status_code, declared.json()["code"]) == (413, "payload_too_large")
    # Without a Content-Length the limit is enforced while streaming; the staged file is dropped.
    streamed = requests.put(put_url, data=_body(17 * MB), headers={"Content-Type": "text/csv"}, timeout=30)
    assert (streamed.status_code, streamed.json()["code"]) == (413, "payload_too_large")
    assert not env.store.list_keys(env.layout.task_prefix(task_id) + "input")
    assert list((env.store.root / META_DIR / "tmp").iterdir()) == []


def test_download_of_a_missing_object_is_404_json(env: Env) -> None:
    url = env.base + env.service.url_signer.presign_get("batch-tasks/nothing-here.csv", expires=60)
    r = requests.get(url, timeout=10)
    assert (r.status_code, r.json()["code"]) == (404, "not_found")
    r = requests.delete(url, timeout=10)
    assert (r.status_code, r.json()["code"]) == (405, "method_not_allowed")
