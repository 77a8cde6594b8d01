"""A browser's upload through a URL that binds its length (issue 36 item 4), in Chromium against SeaweedFS,
which checks signatures: the request the page makes (an XMLHttpRequest PUT of a Blob, with the headers the
plan names, as ui/direct_upload.js sends it) carries the Content-Length the URL signs, so a file of the size
declared goes, and a Blob of another size is refused before the store holds a byte. The page is on the store's
own origin, so no CORS rule is needed (the app's CORS is tested on moto, tests/browser/test_direct_transfer.py)."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from conftest import CHROMIUM, make_store

from s3task.fingerprint import of_stream
from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks import Actor, TaskService
from s3task.tasks.resumable import PART_SIZE, PARTS_ABOVE

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py"),
]

ADA = Actor("ada")
LAYOUT = Layout("batch-tasks")
SMALL = b"id,value\n" + b"1,2\n" * 250

#: As ui/direct_upload.js's put(): the status of one XHR PUT of ``body`` (base64, or ``size`` filler bytes).
_PUT = """async ([url, headers, body, size]) => {
  const bytes = body ? Uint8Array.from(atob(body), c => c.charCodeAt(0)) : new Uint8Array(size).fill(120);
  return await new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.onload = () => resolve(xhr.status);
    xhr.onerror = () => resolve(0);
    xhr.send(new Blob([bytes]));
  });
}"""


def test_chromium_sends_the_length_the_url_signs_and_no_other_goes(
    browser, seaweedfs, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = make_store("seaweedfs", tmp_path, request)
    service = TaskService(store, LAYOUT)
    single = service.begin_browser_upload(ADA, "one piece", "copy", None, None, len(SMALL))
    declared = PARTS_ABOVE + 2**20
    file = of_stream(io.BytesIO(b"x" * declared), "declared.csv", declared)
    parts = service.begin_browser_upload(ADA, "in parts", "copy", None, None, declared, file)
    assert single.url is not None and parts.parts is not None and parts.parts[0] is not None
    page = browser.new_page()
    try:
        page.goto(seaweedfs.endpoint + "/")  # the store's origin: its answer (an error) does not matter
        headers = dict(single.headers or {})
        larger = base64.b64encode(SMALL + b"3,4\n" * 1_000).decode()
        assert page.evaluate(_PUT, [single.url, headers, larger, 0]) == 403
        assert page.evaluate(_PUT, [parts.parts[0], {}, "", PART_SIZE + 1]) == 403
        key = read_record(store, LAYOUT, parts.task_id)[0].input_object_path
        assert store.list_parts(key, str(parts.upload_id)) == []
        assert page.evaluate(_PUT, [parts.parts[0], {}, "", PART_SIZE]) == 200
        assert [p.size for p in store.list_parts(key, str(parts.upload_id))] == [PART_SIZE]
        assert page.evaluate(_PUT, [single.url, headers, base64.b64encode(SMALL).decode(), 0]) == 200
    finally:
        page.close()
    assert service.finish_browser_upload(ADA, single).status == "queued"
