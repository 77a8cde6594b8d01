"""SAS URLs of the Azure backend on Azurite 3.37.0: what a browser does with them.

Downloads are read-only SAS URLs straight to the container. Uploads go through the app (the store's
``presign_put`` is None): the last test shows why, on the raw SDK — a browser's PUT to a SAS URL must
carry ``x-ms-blob-type: BlockBlob``, which ui/direct_upload.js does not send.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import requests
from azure.storage.blob import BlobSasPermissions, generate_blob_sas

from s3task.store.azure import AzureStore
from s3task.store.base import PutMode

pytestmark = pytest.mark.slow


@pytest.fixture
def store(azurite) -> AzureStore:
    return azurite.store(azurite.new_bucket())


def _tampered(url: str) -> str:
    """``url`` with the last character of its signature (``sig``) changed."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    sig = query["sig"]
    query["sig"] = sig[:-2] + ("A" if sig[-2] != "A" else "B") + sig[-1]
    return urlunsplit(parts._replace(query=urlencode(query)))


def test_a_download_url_reads_the_blob_directly_with_its_filename_and_ranges(store: AzureStore, azurite) -> None:
    body = b"id,name\n" + b"1,ada\n" * 1000
    store.put("t/out.csv", body, PutMode.CREATE, content_type="text/csv")
    url = store.presign_get("t/out.csv", expires=600, filename='June "import".csv')
    assert url and url.startswith(f"{azurite.endpoint}/{store.container}/t/out.csv?")  # the store, not the app
    got = requests.get(url, timeout=10)
    assert got.status_code == 200 and got.content == body
    assert got.headers["Content-Disposition"] == 'attachment; filename="June import.csv"'
    part = requests.get(url, headers={"Range": "bytes=0-7"}, timeout=10)
    assert (part.status_code, part.content) == (206, b"id,name\n")


def test_a_tampered_expired_or_misused_download_url_is_refused(store: AzureStore) -> None:
    store.put("t/out.csv", b"a,b\n", PutMode.CREATE)
    url = store.presign_get("t/out.csv", expires=600)
    assert url
    assert requests.get(_tampered(url), timeout=10).status_code == 403
    expired = store.presign_get("t/out.csv", expires=-60)
    assert expired and requests.get(expired, timeout=10).status_code == 403
    put = requests.put(url, data=b"evil\n", headers={"x-ms-blob-type": "BlockBlob"}, timeout=10)
    assert put.status_code == 403  # read-only
    assert store.get("t/out.csv").body == b"a,b\n"


def test_uploads_go_through_the_app_and_a_direct_put_needs_the_blob_type_header(store: AzureStore, azurite) -> None:
    assert store.presign_put("t/in.csv", expires=600, content_type="text/csv") is None
    sas = generate_blob_sas(
        azurite.access_key,
        store.container,
        "t/in.csv",
        account_key=azurite.secret_key,
        permission=BlobSasPermissions(create=True, write=True),
        expiry=datetime.now(UTC) + timedelta(minutes=10),
    )
    url = f"{store.client.get_blob_client('t/in.csv').url}?{sas}"
    bare = requests.put(url, data=b"a,b\n", headers={"Content-Type": "text/csv"}, timeout=10)
    assert bare.status_code == 400  # what ui/direct_upload.js sends today: refused
    typed = {"Content-Type": "text/csv", "x-ms-blob-type": "BlockBlob"}
    assert requests.put(url, data=b"a,b\n", headers=typed, timeout=10).status_code == 201
    assert (store.get("t/in.csv").body, store.head("t/in.csv").content_type) == (b"a,b\n", "text/csv")
