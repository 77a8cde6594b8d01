"""Direct upload to Azure Blob Storage in a real browser, on Azurite 3.37.0 (tests/realstores.py).

The app runs on ``az://<container>/batch-tasks`` with Azurite's connection string; ``python -m s3task
init --origin <the app's origin>`` sets the account's CORS rule (Azurite answers preflights from its
service properties, so nothing else lets the browser in). From the New task page, in Chromium:

- a small CSV goes as one PUT to the blob's SAS URL (with ``x-ms-blob-type``, as the plan names it);
- a CSV over the multipart threshold goes as blocks (Put Block to SAS URLs, four at a time), which the
  app commits;
- each time no byte goes through the app, the task completes, and the input the worker read is
  byte-identical to the file (and every row of the output is the file's);
- the SAS URL the browser used, aimed from the page at another blob (the task's record, another task's
  input), is refused by Azurite's signature check (403) and writes nothing;
- with no CORS rule on the account, the page falls back to uploading through the app.
"""

from __future__ import annotations

import csv
import io
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from browsers import app_on, base_env, copy_task_previewed, pick_file, settle, shot
from conftest import CHROMIUM, free_port, wait_for
from procs import cli

from s3task.errors import NotFound
from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks.resumable import PART_SIZE, PARTS_ABOVE

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # ui/ lives next to app.py


pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found"),
]

LAYOUT = Layout("batch-tasks")


def _csv(path: Path, size: int) -> int:
    """A CSV of about ``size`` bytes (id, name, value); its number of data rows."""
    rows, block = 0, 20_000
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write("id,name,value\n")
        while f.tell() < size:
            f.write("".join(f"{i},customer {i:07d},{i * 7 % 1000:03d}\n" for i in range(rows, rows + block)))
            rows += block
    return rows


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _submit(page: Any, url: str, data: Path, name: str) -> str:
    """New task → copy rows → pick the file → preview → Submit → the task's page; the task's id."""

    copy_task_previewed(page, url, data)
    shot(page, f"azure-{name}-preview")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=120_000)
    return str(page.url.rsplit("=", 1)[1])


def _completed(store: Any, task_id: str) -> Any:
    record = read_record(store, LAYOUT, task_id)[0]
    assert record.status not in ("failed", "abandoned"), record.last_error
    return record if record.status == "completed" else None


# What the page's own script gets back when it PUTs to ``url``: the status, or 0 if the browser saw none.
_PUT_FROM_PAGE = """async (url) => {
  try {
    const r = await fetch(url, {method: "PUT", body: "evil,row\\n",
                                headers: {"Content-Type": "text/csv", "x-ms-blob-type": "BlockBlob"}});
    return r.status;
  } catch (e) { return 0; }
}"""


def test_small_and_multi_block_files_go_from_the_browser_to_the_container(browser, azurite, tmp_path: Path) -> None:
    container, port = azurite.new_bucket(), free_port()
    origin = f"http://127.0.0.1:{port}"
    env = base_env(S3TASK_STORE=f"az://{container}/batch-tasks", **azurite.env)
    init = cli("init", "--origin", origin, env=env, timeout=60)
    assert init.returncode == 0, init.stderr
    store = azurite.store(container)
    small, big = tmp_path / "small customers.csv", tmp_path / "big customers.csv"
    small_rows, big_rows = _csv(small, 200_000), _csv(big, PARTS_ABOVE + 3 * 2**20)
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    sent: list[tuple[str, str, dict[str, str]]] = []
    page.on("request", lambda r: sent.append((r.method, r.url, r.headers)))
    try:
        with app_on(port, env, tmp_path / "streamlit.log") as (url, _pid):
            for data, rows, name in ((small, small_rows, "small"), (big, big_rows, "big")):
                sent.clear()
                task_id = _submit(page, url, data, name)
                blob = f"{azurite.endpoint}/{container}/batch-tasks/{task_id}/input.csv?"
                puts = [(u, h) for m, u, h in sent if m == "PUT"]
                assert puts and all(u.startswith(blob) for u, _ in puts), [u for u, _ in puts]  # the store only
                if name == "small":
                    ((_, headers),) = puts  # one Put Blob, with the blob type the plan named
                    assert headers.get("x-ms-blob-type") == "BlockBlob" and "comp=block" not in puts[0][0]
                    single_url = puts[0][0]
                else:
                    blocks = [u for u, _ in puts if "comp=block&blockid=" in u]
                    assert len(blocks) == len(puts) == math.ceil(data.stat().st_size / PART_SIZE) >= 2
                record = wait_for(lambda t=task_id: _completed(store, t), timeout=180, what=f"{name} task completed")
                assert store.get(record.input_object_path).body == data.read_bytes()  # byte-identical
                assert record.input_etag == store.head(record.input_object_path).etag  # what the worker read
                assert record.row_count == record.processed_count == rows
                out = store.get(record.output_object_path).body.decode("utf-8-sig")
                assert _rows(out) == _rows(data.read_text(encoding="utf-8"))  # every row, copied unchanged
            shot(page, "azure-big-completed")
            # The small file's SAS URL, aimed from the page at other blobs: Azurite checks the signature.
            small_id = single_url.split("/batch-tasks/", 1)[1].split("/", 1)[0]
            others = [LAYOUT.status_key(small_id), LAYOUT.input_key(task_id), f"batch-tasks/{small_id}x/input.csv"]
            for other in others:
                aimed = single_url.replace(f"/{LAYOUT.input_key(small_id)}?", f"/{other}?")
                assert aimed != single_url and page.evaluate(_PUT_FROM_PAGE, aimed) == 403, other
            assert read_record(store, LAYOUT, small_id)[0].status == "completed"  # its record is untouched
            assert store.get(LAYOUT.input_key(task_id)).body == big.read_bytes()  # the other task's input too
            with pytest.raises(NotFound):
                store.head(others[2])
            assert page.evaluate(_PUT_FROM_PAGE, single_url) == 403  # nor can it replace its own file
            assert store.get(LAYOUT.input_key(small_id)).body == small.read_bytes()
    finally:
        page.close()


def test_an_account_without_the_cors_rule_makes_the_page_upload_through_the_app(browser, azurite, tmp_path) -> None:
    """No CORS rule for the app's origin (the account's rules are empty): Azurite refuses the preflight, the
    page says it could not reach the store and takes the file through Streamlit's uploader instead."""
    from playwright.sync_api import expect

    azurite.client().set_service_properties(cors=[])
    container = azurite.new_bucket()
    env = base_env(S3TASK_STORE=f"az://{container}/batch-tasks", S3TASK_EMBEDDED_WORKER="0", **azurite.env)
    data = tmp_path / "people.csv"
    data.write_bytes(b"name,age\nann,007\n")
    store = azurite.store(container)
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    try:
        with app_on(free_port(), env, tmp_path / "streamlit.log") as (url, _pid):
            page.goto(url + "/new_task")
            settle(page)
            pick_file(page, data, "2 columns: name, age")
            settle(page)
            page.get_by_role("button", name="Submit").click()
            expect(page.get_by_text("could not send the file to the task store directly")).to_be_visible(timeout=60_000)
            settle(page)
            page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(str(data))
            expect(page.get_by_text("2 columns: name, age")).to_be_visible(timeout=20_000)
            settle(page)
            page.get_by_role("button", name="Submit").click()
            page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=20_000)
            task_id = page.url.rsplit("=", 1)[1]
        record = read_record(store, LAYOUT, task_id)[0]
        assert record.status == "queued" and store.get(record.input_object_path).body == data.read_bytes()
    finally:
        page.close()
