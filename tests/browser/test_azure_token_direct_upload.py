"""Direct transfers in a real browser with the app signed in to Azure with a token, on Azurite 3.37.0 over
HTTPS with ``--oauth basic`` (tests/realstores.py ``AzuriteOAuth``).

The app runs on ``az://<container>/batch-tasks`` with ``AZURE_STORAGE_ACCOUNT_URL`` and no connection
string: azure-identity's ``DefaultAzureCredential`` gets its tokens from the App Service managed-identity
endpoint tests/fake_identity.py stands in for, and the SAS URLs it hands the browser are signed with a
user delegation key. From the New task page, in Chromium (a context that accepts Azurite's self-signed
certificate): a CSV goes as one PUT to the blob's SAS URL, the task completes with the input
byte-identical, and the result downloads from the container's SAS URL, every row. The account-key
version, with blocks and misuses: tests/browser/test_azure_direct_upload.py.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from browsers import app_on, base_env, copy_task_previewed, settle, shot
from conftest import CHROMIUM, free_port, wait_for
from fake_identity import TokenService, token_service
from procs import cli

from s3task.layout import Layout
from s3task.records import read_record

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found"),
]

LAYOUT = Layout("batch-tasks")


@pytest.fixture
def identity() -> Iterator[TokenService]:
    with token_service() as service:
        yield service


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _completed(store: Any, task_id: str) -> Any:
    record = read_record(store, LAYOUT, task_id)[0]
    assert record.status not in ("failed", "abandoned"), record.last_error
    return record if record.status == "completed" else None


def test_a_file_goes_from_the_browser_to_the_container_and_back_signed_with_a_delegation_key(
    browser: Any, azurite_oauth: Any, identity: TokenService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(azurite_oauth.cert))  # this test's own view (the account key)
    container, port = azurite_oauth.new_bucket(), free_port()
    origin = f"http://127.0.0.1:{port}"
    env = base_env(S3TASK_STORE=f"az://{container}/batch-tasks", **azurite_oauth.token_env(identity))
    env.pop("AZURE_STORAGE_CONNECTION_STRING", None)
    init = cli("init", "--origin", origin, env=env, timeout=60)
    assert init.returncode == 0, init.stderr
    store = azurite_oauth.store(container)
    data = tmp_path / "customers.csv"
    data.write_text("id,name,value\n" + "".join(f"{i},customer {i:07d},{i % 1000:03d}\n" for i in range(2000)))
    context = browser.new_context(
        ignore_https_errors=True, accept_downloads=True, viewport={"width": 1300, "height": 1000}
    )
    page = context.new_page()
    sent: list[tuple[str, str, dict[str, str]]] = []
    page.on("request", lambda r: sent.append((r.method, r.url, r.headers)))
    try:
        with app_on(port, env, tmp_path / "streamlit.log") as (url, _pid):
            copy_task_previewed(page, url, data)
            page.get_by_role("button", name="Submit").click()
            page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=120_000)
            task_id = page.url.rsplit("=", 1)[1]
            puts = [(u, h) for m, u, h in sent if m == "PUT"]
            ((put_url, headers),) = puts  # one Put Blob, straight to the blob, no byte through the app
            assert put_url.startswith(f"{azurite_oauth.endpoint}/{container}/{LAYOUT.input_key(task_id)}?")
            assert headers.get("x-ms-blob-type") == "BlockBlob"
            assert parse_qs(urlsplit(put_url).query)["skoid"] == [identity.object_id]  # a delegation key's SAS
            record = wait_for(lambda: _completed(store, task_id), timeout=180, what="task completed")
            assert store.get(record.input_object_path).body == data.read_bytes()  # byte-identical
            assert record.input_etag == store.head(record.input_object_path).etag
            expect(page.get_by_role("heading", name="Result")).to_be_visible(timeout=120_000)
            settle(page)
            shot(page, "azure-token-completed")
            with page.expect_download(timeout=60_000) as download:
                page.get_by_role("button", name="Download result (CSV)").click()
            got = download.value
            assert got.url.startswith(f"{azurite_oauth.endpoint}/{container}/{record.output_object_path}?")
            assert "skoid" in parse_qs(urlsplit(got.url).query)
            saved = Path(got.path()).read_bytes().decode("utf-8-sig")
            assert _rows(saved) == _rows(data.read_text(encoding="utf-8"))  # every row, copied unchanged
    finally:
        context.close()
