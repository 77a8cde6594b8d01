"""Direct upload to Google Cloud Storage in a real browser, on fake-gcs-server 1.54.0 (tests/realstores.py).

The app runs on ``gs://<bucket>/batch-tasks`` with the emulator's host and a service-account key made for
the run (it signs the V4 URLs, as a key file does on GCS); ``python -m s3task init --origin <the app's
origin>`` sets the bucket's CORS rule. From the New task page, in Chromium, a CSV goes from the browser to
the bucket in one PUT to its signed URL, with the headers the URL signs (``Content-Type``, and
``x-goog-if-generation-match: 0``: the URL creates the object and cannot replace it on GCS); no byte goes
through the app; the worker inside the app completes the task, and the input it read is byte-identical to
the file.

What the emulator cannot show (docs/STORES.md): it checks no signature and no precondition on such a PUT,
and keeps no bucket's CORS rule: it lets every origin in, with the request headers its ``-cors-headers``
flag allows (tests/realstores.py allows the one the URL signs, as init's rule does on GCS). So a URL aimed
elsewhere and a browser the rule leaves out are tested on S3 and Azure, and the signature itself in
tests/contract/test_gcs_quirks.py.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import pytest
from browsers import app_on, base_env, copy_task_previewed, shot
from conftest import CHROMIUM, free_port, wait_for
from procs import cli

from s3task.layout import Layout
from s3task.records import read_record

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found"),
]

LAYOUT = Layout("batch-tasks")


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _completed(store: Any, task_id: str) -> Any:
    record = read_record(store, LAYOUT, task_id)[0]
    assert record.status not in ("failed", "abandoned"), record.last_error
    return record if record.status == "completed" else None


def test_a_csv_goes_from_the_browser_to_the_bucket_in_one_signed_put(browser, fake_gcs, tmp_path: Path) -> None:
    bucket, port = fake_gcs.new_bucket(), free_port()
    env = base_env(S3TASK_STORE=f"gs://{bucket}/batch-tasks", **fake_gcs.env)
    init = cli("init", "--origin", f"http://127.0.0.1:{port}", env=env, timeout=60)
    assert init.returncode == 0, init.stderr
    store = fake_gcs.store(bucket)
    data = tmp_path / "customers.csv"
    data.write_text("id,name,value\n" + "".join(f"{i},customer {i:05d},{i * 7 % 1000:03d}\n" for i in range(5000)))
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    sent: list[tuple[str, str, dict[str, str]]] = []
    page.on("request", lambda r: sent.append((r.method, r.url, r.headers)))
    try:
        with app_on(port, env, tmp_path / "streamlit.log") as (url, _pid):
            copy_task_previewed(page, url, data)
            sent.clear()
            page.get_by_role("button", name="Submit").click()
            page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=120_000)
            task_id = page.url.rsplit("=", 1)[1]
            puts = [(u, h) for m, u, h in sent if m == "PUT"]
            ((put_url, headers),) = puts  # one PUT, to the store: the file never went through the app
            assert put_url.startswith(f"{fake_gcs.endpoint}/{bucket}/{LAYOUT.input_key(task_id)}?"), put_url
            assert "X-Goog-Signature=" in put_url and "X-Goog-Algorithm=GOOG4-RSA-SHA256" in put_url
            assert headers.get("x-goog-if-generation-match") == "0"  # signed: the URL only creates
            assert headers.get("content-type") == "text/csv"
            record = wait_for(lambda: _completed(store, task_id), timeout=180, what="the task completed")
            shot(page, "gcs-completed")
        assert store.get(record.input_object_path).body == data.read_bytes()  # byte-identical
        assert record.input_etag == store.head(record.input_object_path).etag  # what the worker read
        assert record.row_count == record.processed_count == 5000
        out = store.get(record.output_object_path).body.decode("utf-8-sig")
        assert _rows(out) == _rows(data.read_text(encoding="utf-8"))  # every row, copied unchanged
    finally:
        page.close()
