"""Continue upload on Google Cloud Storage in Chromium (issue 33), on fake-gcs-server 1.54.0 (tests/realstores.py).

A 64 MiB file goes from the New task page in 8 MiB parts, each PUT to its own V4 signed URL as an object under
``batch-tasks/parts/`` (s3task/store/gcs_parts.py), with the browser's upload throttled as in
test_resume_upload_browser.py. The page is reloaded mid-upload: the task waits with the parts the bucket holds.
On the task's page the same file is chosen again and **Continue upload** pressed: the browser PUTs only the parts
the bucket lacked (read from the requests Chromium made), the app composes them, and the task is queued, its
input byte-identical to the file, with no part left in the bucket. What the bucket holds is read with the
google-cloud-storage client.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import procs
import pytest
from browsers import base_env, settle, shot
from conftest import CHROMIUM, free_port, wait_for
from test_resume_upload_browser import continue_on_task_page, make_csv, start_on_new_task, throttle

from s3task.layout import Layout
from s3task.records import read_record

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found"),
]

MB = 1 << 20
SIZE = 64 * MB  # at least: 8 parts of 8 MiB and a short ninth (ui/direct.py), sent four at a time
PART = 8 * MB
#: Bytes a second the browser may send before the reload: the first four parts take about 4 s.
RATE = 8 * MB
#: How long the whole file takes at that rate: the waits for parts are a few times this.
THROTTLED_SECONDS = SIZE / RATE
LAYOUT = Layout("batch-tasks")
PART_URL = re.compile(r"/batch-tasks/parts/batch-tasks/[0-9A-Z]{26}/input\.csv/[0-9a-f]{16}/(\d{5})\?")


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_csv(tmp_path_factory.mktemp("files") / "customers.csv", SIZE)


def task_ids(store: Any) -> list[str]:
    return [i for i in (LAYOUT.task_id_of(k) for k in store.list_prefixes(LAYOUT.root)) if i]


def held(store: Any, task_id: str) -> list[int]:
    """The parts the bucket holds of the task's input, by number, listed with the client itself."""
    prefix = f"{LAYOUT.root}parts/{LAYOUT.input_key(task_id)}/"
    tails = [b.name.rsplit("/", 1)[1] for b in store.client.list_blobs(store.bucket_name, prefix=prefix)]
    return sorted(int(t) for t in tails if t.isdigit())


def numbers(urls: list[str]) -> list[int]:
    """The part numbers of the part PUTs among ``urls``."""
    return sorted(int(m.group(1)) for u in urls if (m := PART_URL.search(u)))


def test_a_reload_mid_upload_then_continue_upload_sends_only_the_parts_the_bucket_lacks(
    browser, fake_gcs, big: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    port = free_port()
    bucket = fake_gcs.new_bucket()
    env = base_env(S3TASK_STORE=f"gs://{bucket}/{LAYOUT.prefix}", S3TASK_EMBEDDED_WORKER="0", **fake_gcs.env)
    init = procs.cli("init", "--origin", f"http://127.0.0.1:{port}", env=env, timeout=60)
    assert init.returncode == 0, init.stderr
    store = fake_gcs.store(bucket)
    parts = -(-big.stat().st_size // PART)
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.on("dialog", lambda dialog: dialog.accept())  # "Leave page?": yes, leave (the reload goes on)
    puts: list[str] = []
    page.on("request", lambda r: puts.append(r.url) if r.method == "PUT" else None)
    try:
        with procs.Procs(tmp_path, env) as started:
            url = started.streamlit("app.py", port=port, name="app").url
            start_on_new_task(page, url, big)
            throttle(page, RATE)
            page.get_by_role("button", name="Submit").click()
            (task_id,) = wait_for(lambda: task_ids(store), 30, what="the task created")
            wait_for(lambda: len(held(store, task_id)) >= 4, 10 * THROTTLED_SECONDS, what="four parts in")
            page.evaluate("() => location.reload()")  # the person reloads mid-upload
            settle(page)
            assert read_record(store, LAYOUT, task_id)[0].status == "created"
            kept = held(store, task_id)
            assert 4 <= len(kept) < parts, kept
            before = len(puts)
            throttle(page, -1)
            continue_on_task_page(page, url, task_id, big)
            record = wait_for(
                lambda: (r := read_record(store, LAYOUT, task_id)[0]).status != "created" and r,
                120,
                what="the task queued",
            )
            # What the person sees: the task queued, no longer waiting for its file.
            expect(page.get_by_text("Waiting for a worker to pick it up")).to_be_visible(timeout=30_000)
            shot(page, "gcs-continued")
        sent_after = numbers(puts[before:])
        assert sent_after == [n for n in range(1, parts + 1) if n not in kept], (kept, sent_after)
        assert task_ids(store) == [task_id], "continuing made another task"
        assert (record.status, record.input_size_bytes) == ("queued", big.stat().st_size)
        stored = store.bucket.get_blob(LAYOUT.input_key(task_id)).download_as_bytes()
        assert hashlib.sha256(stored).digest() == hashlib.sha256(big.read_bytes()).digest(), "not the file picked"
        assert held(store, task_id) == [] and store.open_uploads(LAYOUT.root) == []  # nothing left of the upload
    finally:
        page.close()
