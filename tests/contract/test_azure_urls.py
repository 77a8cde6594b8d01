"""SAS URLs of the Azure backend on Azurite 3.37.0: what a browser does with them.

Downloads are read-only SAS URLs straight to the container. Uploads are SAS URLs too; the last test
shows that a PUT to one must carry the headers the store names (``x-ms-blob-type: BlockBlob``).
tests/contract/test_azure_uploads.py has the rest of the uploads (blocks, what a URL cannot write).
"""

from __future__ import annotations

import pytest
import requests
from sas_urls import tampered

from s3task.store.azure import AzureStore
from s3task.store.base import PutMode

pytestmark = pytest.mark.slow


@pytest.fixture
def store(azurite) -> AzureStore:
    return azurite.store(azurite.new_bucket())


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
    assert requests.get(tampered(url), timeout=10).status_code == 403
    expired = store.presign_get("t/out.csv", expires=-60)
    assert expired and requests.get(expired, timeout=10).status_code == 403
    put = requests.put(url, data=b"evil\n", headers={"x-ms-blob-type": "BlockBlob"}, timeout=10)
    assert put.status_code == 403  # read-only
    assert store.get("t/out.csv").body == b"a,b\n"


def test_an_upload_url_needs_the_blob_type_header_the_store_names(store: AzureStore) -> None:
    url = store.presign_put("t/in.csv", expires=600, content_type="text/csv")
    assert url and url.startswith(store.client.get_blob_client("t/in.csv").url + "?")  # the store, not the app
    bare = requests.put(url, data=b"a,b\n", headers={"Content-Type": "text/csv"}, timeout=10)
    assert bare.status_code == 400  # the Content-Type alone: refused
    typed = {"Content-Type": "text/csv", **store.put_headers()}
    assert typed["x-ms-blob-type"] == "BlockBlob"
    assert requests.put(url, data=b"a,b\n", headers=typed, timeout=10).status_code == 201
    assert (store.get("t/in.csv").body, store.head("t/in.csv").content_type) == (b"a,b\n", "text/csv")
