"""The Azure backend signed in with a token, on Azurite 3.37.0 over HTTPS with ``--oauth basic``.

The store is opened as an operator's would be: ``az://<container>/p`` with ``AZURE_STORAGE_ACCOUNT_URL``
and no connection string, so azure-identity's real ``DefaultAzureCredential`` signs it in (through the
App Service managed-identity endpoint tests/fake_identity.py stands in for). There is no account key:
SAS URLs are signed with a user delegation key the token asks Azurite for
(s3task/store/azure_uploads.py ``Blocks.delegation_key``), one per :data:`DELEGATION_SECONDS`.

What Azurite was asked is read from its access log (``AzuriteOAuth.asked``). Azurite has no roles: a
token it refuses (another audience) stands in for an identity without Storage Blob Delegator.
tests/contract/test_azure_urls.py and test_azure_uploads.py check the same URLs signed with the key.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from fake_identity import STORAGE, TokenService, token_service
from sas_urls import aimed_at, tampered

from s3task import cli_store
from s3task.clock import Clock
from s3task.config import MAX_URL_SECONDS
from s3task.errors import (
    AccessDeniedByStore,
    AlreadyExists,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreUnavailable,
)
from s3task.layout import Layout
from s3task.store import open_store
from s3task.store.azure import AzureStore
from s3task.store.azure_account import delegation_check
from s3task.store.azure_uploads import DELEGATION_SECONDS, FAILURE_SECONDS, REFUSAL_SECONDS
from s3task.store.base import PutMode
from s3task.tasks import Actor, TaskService

pytestmark = pytest.mark.slow

KEY = "t/input.csv"
KEY_REQUEST = "comp=userdelegationkey"


class Later(Clock):
    """The machine's clock, moved on by ``ahead`` seconds when a test says so."""

    ahead = 0.0

    def wall(self) -> float:
        return time.time() + self.ahead


@pytest.fixture
def identity() -> Iterator[TokenService]:
    with token_service() as service:
        yield service


def signed_in(server: Any, identity: TokenService, monkeypatch: pytest.MonkeyPatch, clock: Clock | None = None) -> Any:
    """A store on a fresh container, opened from ``az://`` and the environment, signed in through ``identity``."""
    container = server.new_bucket()
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    for name, value in server.token_env(identity).items():
        monkeypatch.setenv(name, value)
    store, layout = open_store(f"az://{container}/p", **({"clock": clock} if clock else {}))
    assert isinstance(store, AzureStore) and layout.prefix == "p"
    return store


@pytest.fixture
def store(azurite_oauth: Any, identity: TokenService, monkeypatch: pytest.MonkeyPatch) -> Any:
    return signed_in(azurite_oauth, identity, monkeypatch)


def key_requests(lines: list[str]) -> list[str]:
    return [line for line in lines if KEY_REQUEST in line]


def test_signed_in_with_a_token_records_are_written_with_conditions(store: Any, identity: TokenService) -> None:
    assert type(store.client.credential).__name__ == "DefaultAzureCredential"
    assert not getattr(store.client.credential, "account_key", None)  # no key: the token is all it has
    etag = store.put("t/status.json", b'{"v": 1}', PutMode.CREATE)
    with pytest.raises(AlreadyExists):
        store.put("t/status.json", b'{"v": 2}', PutMode.CREATE)
    newer = store.put("t/status.json", b'{"v": 2}', PutMode.update(etag))
    with pytest.raises(PreconditionFailed):
        store.put("t/status.json", b'{"v": 3}', PutMode.update(etag))  # stale
    assert (store.get("t/status.json").body, store.head("t/status.json").etag) == (b'{"v": 2}', newer)
    assert store.list_keys("t/") == ["t/status.json"]
    assert identity.issued == [STORAGE]  # one token, for storage, for every request


def test_a_download_url_is_signed_with_a_delegation_key_and_reads_the_blob(
    store: Any, azurite_oauth: Any, identity: TokenService
) -> None:
    body = b"id,name\n" + b"1,ada\n" * 1000
    store.put("t/out.csv", body, PutMode.CREATE, content_type="text/csv")
    url = store.presign_get("t/out.csv", expires=600, filename="June.csv")
    assert url and url.startswith(f"{azurite_oauth.endpoint}/{store.container}/t/out.csv?")  # the store, not the app
    query = parse_qs(urlsplit(url).query)
    assert query["skoid"] == [identity.object_id]  # a user delegation key's signature, for the token's identity
    cert = str(azurite_oauth.cert)
    got = requests.get(url, timeout=10, verify=cert)  # no credentials: the URL is all it has
    assert got.status_code == 200 and got.content == body
    assert got.headers["Content-Disposition"] == 'attachment; filename="June.csv"'
    assert requests.get(tampered(url), timeout=10, verify=cert).status_code == 403
    expired = store.presign_get("t/out.csv", expires=-60)
    assert expired and requests.get(expired, timeout=10, verify=cert).status_code == 403
    put = requests.put(url, data=b"evil\n", headers=store.put_headers(), timeout=10, verify=cert)
    assert put.status_code == 403  # read-only
    assert store.get("t/out.csv").body == body


def test_an_upload_url_creates_the_blob_once_and_writes_no_other(store: Any, azurite_oauth: Any) -> None:
    cert = str(azurite_oauth.cert)
    store.put("t/status.json", b"{}", PutMode.CREATE)
    url = store.presign_put(KEY, expires=600, content_type="text/csv")
    assert url and url.startswith(store.client.get_blob_client(KEY).url + "?")
    headers = {"Content-Type": "text/csv", **store.put_headers()}
    assert requests.put(url, data=b"a,b\n1,2\n", headers=headers, timeout=10, verify=cert).status_code == 201
    assert store.get(KEY).body == b"a,b\n1,2\n" and store.head(KEY).content_type == "text/csv"
    again = requests.put(url, data=b"a,b\nevil,row\n", headers=headers, timeout=10, verify=cert)
    assert again.status_code == 403  # the create permission only: it cannot replace the file
    for other in ("t/status.json", "u/input.csv"):
        aimed = requests.put(aimed_at(url, other), data=b"x", headers=headers, timeout=10, verify=cert)
        assert aimed.status_code == 403, other
    assert (store.get(KEY).body, store.get("t/status.json").body) == (b"a,b\n1,2\n", b"{}")
    with pytest.raises(NotFound):
        store.head("u/input.csv")


def test_blocks_sent_through_their_urls_are_committed_into_the_file(store: Any, azurite_oauth: Any) -> None:
    cert = str(azurite_oauth.cert)
    chunks = [b"id,name\n", b"1,ada\n", b"2,grace\n"]
    upload_id = store.create_multipart(KEY, content_type="text/csv")
    urls = [store.presign_part(KEY, upload_id, n, expires=600) for n in (1, 2, 3)]
    assert requests.put(aimed_at(urls[0], "t/status.json"), data=b"x", timeout=10, verify=cert).status_code == 403
    for index in (2, 0, 1):  # a browser sends them in parallel: any order
        assert requests.put(urls[index], data=chunks[index], timeout=10, verify=cert).status_code == 201
    assert [(p.number, p.size) for p in store.list_parts(KEY, upload_id)] == [(1, 8), (2, 6), (3, 8)]
    etag = store.complete_multipart(KEY, upload_id, [(3, ""), (1, ""), (2, "")])
    assert store.get(KEY).body == b"".join(chunks) and store.head(KEY).etag == etag
    with pytest.raises(NotFound):
        store.head("t/status.json")  # the part URL aimed elsewhere wrote nothing


def test_one_delegation_key_signs_every_url_until_one_would_outlive_it(store: Any, azurite_oauth: Any) -> None:
    upload_id = store.create_multipart(KEY, content_type="text/csv")
    with azurite_oauth.asked() as asked:
        urls = [store.presign_get(f"t/{n}.csv", expires=600) for n in range(3)]
        urls += [store.presign_put(f"u/{n}.csv", expires=3600, content_type="text/csv") for n in range(2)]
        urls += [store.presign_part(KEY, upload_id, n, expires=600) for n in (1, 2, 3)]
    assert all(urls) and len(set(urls)) == 8
    assert len(key_requests(asked)) == 1 and " 200 " in key_requests(asked)[0]  # one key for all eight
    with azurite_oauth.asked() as asked:
        assert store.presign_get("t/0.csv", expires=DELEGATION_SECONDS + 3600)  # past the held key's expiry
        assert store.presign_get("t/1.csv", expires=DELEGATION_SECONDS + 1800)
    assert len(key_requests(asked)) == 1  # a longer-lived key, asked for once


def test_a_refused_delegation_key_means_no_urls_and_no_asking_again_for_a_while(
    azurite_oauth: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Later()
    with token_service(audience="https://vault.azure.net") as refused:
        store = signed_in(azurite_oauth, refused, monkeypatch, clock)
        with azurite_oauth.asked() as asked, caplog.at_level(logging.WARNING, "s3task.store.azure_uploads"):
            assert store.presign_get("t/out.csv", expires=600) is None  # files go through the app
        assert [" 403 " in line for line in key_requests(asked)] == [True]
        assert "Storage Blob Delegator" in caplog.text and "no download or upload links" in caplog.text
        caplog.clear()
        with azurite_oauth.asked() as asked:  # within REFUSAL_SECONDS: not asked again, nor logged again
            assert store.presign_get("t/out.csv", expires=600) is None
            assert store.presign_put(KEY, expires=600, content_type="text/csv") is None
            with pytest.raises(StoreError, match="cannot sign upload URLs"):
                store.presign_part(KEY, store.create_multipart(KEY, content_type="text/csv"), 1, expires=600)
        assert key_requests(asked) == [] and caplog.text == ""
        clock.ahead = REFUSAL_SECONDS + 1
        with azurite_oauth.asked() as asked:
            assert store.presign_get("t/out.csv", expires=600) is None
        assert len(key_requests(asked)) == 1  # the while is over: asked again (and refused again)
        # Azurite refuses this token for everything (it has no roles to refuse only the key with).
        with pytest.raises(AccessDeniedByStore):
            store.get("t/out.csv")


def test_doctors_check_says_whether_the_identity_can_get_a_delegation_key(
    store: Any, azurite_oauth: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What ``s3task doctor`` prints on a store signed in with a token (tests/system/test_azurite_token_workers.py)."""
    assert delegation_check(store) == (True, "browser URLs are signed with a user delegation key")
    assert delegation_check(azurite_oauth.store(store.container)) is None  # the account key signs: nothing to ask
    with token_service(audience="https://vault.azure.net") as refused:
        denied = signed_in(azurite_oauth, refused, monkeypatch)
        ok, what = delegation_check(denied) or (None, "")
        assert ok is False
        assert "needs the role Storage Blob Delegator" in what and "the app makes no download links" in what
        capsys.readouterr()
        assert cli_store._doctor_signing(signed_in(azurite_oauth, refused, monkeypatch)) == cli_store.EXIT_ERROR
    said = capsys.readouterr()
    assert said.out == "" and said.err.startswith("problem: Azure refused a user delegation key")
    assert "\nfix: give the identity the role Storage Blob Delegator on the storage account" in said.err


def sas_times(url: str) -> tuple[datetime, datetime]:
    """A delegation-key SAS URL's own expiry (``se``) and its key's (``ske``)."""
    query = parse_qs(urlsplit(url).query)
    return tuple(datetime.fromisoformat(query[name][0].replace("Z", "+00:00")) for name in ("se", "ske"))  # type: ignore[return-value]


@pytest.mark.parametrize("seconds", [86_400, MAX_URL_SECONDS])
def test_long_lived_urls_share_one_key_that_outlives_them(store: Any, azurite_oauth: Any, seconds: int) -> None:
    """URLs of a day or a week (S3TASK_URL_SECONDS, a big file's parts) are signed with one key, not one each."""
    with azurite_oauth.asked() as asked:
        urls = [store.presign_get(f"t/{n}.csv", expires=seconds) for n in range(10)]
    assert all(urls) and len(key_requests(asked)) == 1
    now = store.now()
    for url in urls:
        expires, key_expires = sas_times(url)
        assert key_expires >= expires  # the URL lives as long as it says (its key would refuse it later)
        assert key_expires <= now + timedelta(days=7)  # Azure gives no key that lasts longer
        # As long as asked; at a week, up to 11 minutes shorter (the key's longest, from when it was asked).
        short = timedelta(minutes=11) if seconds == MAX_URL_SECONDS else timedelta(seconds=2)
        assert now + timedelta(seconds=seconds) - short <= expires <= now + timedelta(seconds=seconds)


class Closing:
    """A port that takes connections and closes them at once, counting them: Azure not answering."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


def not_answering_for_keys(store: Any, monkeypatch: pytest.MonkeyPatch) -> Closing:
    """The store's account endpoint (where it asks for delegation keys) at a port that never answers; its
    records still go to Azurite through the container's client."""
    closing = Closing()
    monkeypatch.setattr(store, "account_url", f"https://127.0.0.1:{closing.port}/devstoreaccount1")
    return closing


def test_azure_not_answering_for_a_key_fails_the_urls_at_once_for_a_while(
    azurite_oauth: Any, identity: TokenService, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Later()
    store = signed_in(azurite_oauth, identity, monkeypatch, clock)
    closing = not_answering_for_keys(store, monkeypatch)
    with pytest.raises(StoreUnavailable):
        store.presign_get("t/out.csv", expires=600)
    tried = closing.accepted
    assert tried >= 1
    with pytest.raises(StoreUnavailable):  # within FAILURE_SECONDS: the same answer, nothing asked
        store.presign_put(KEY, expires=600, content_type="text/csv")
    assert closing.accepted == tried
    clock.ahead = FAILURE_SECONDS + 1
    with pytest.raises(StoreUnavailable):
        store.presign_get("t/out.csv", expires=600)
    assert closing.accepted > tried  # the while is over: asked again


def test_a_task_is_not_made_when_its_upload_link_cannot_be(
    azurite_oauth: Any, identity: TokenService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The New task page and POST /api/tasks create a task with its upload URL: no URL now, no task."""
    store = signed_in(azurite_oauth, identity, monkeypatch)
    service = TaskService(store, Layout("p"))
    not_answering_for_keys(store, monkeypatch)
    with pytest.raises(StoreUnavailable):
        service.create(Actor("ann"), "March list", "copy")
    assert service.list(Actor("ann")).tasks == [] and store.list_keys("p/") == []
